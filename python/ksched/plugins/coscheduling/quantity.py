"""Go's ``resource.Quantity`` as far as Coscheduling's "resource gap" message shows it.

``CheckClusterResource`` subtracts every node's free room from the PodGroup's
``minResources`` and, when room is left wanting, returns ``fmt.Errorf("resource gap:
%v", resourceRequest)``: a ``v1.ResourceList`` printed by ``%v``, i.e. every remaining
``Quantity`` as its struct fields (``{{1500 -3} {<nil>}  DecimalSI}``: the int64 amount's
value and decimal scale, the arbitrary-precision amount, the cached string, the
format), keys sorted. To print the same text the quantities are kept here in Go's own
representation: ``ParseQuantity``'s int64 fast path, ``NewQuantity`` /
``NewMilliQuantity``, and ``Quantity.Sub``'s scale alignment. A quantity that leaves the
int64 path (huge or very precise amounts) is printed by Go with a pointer address, which
no other process can reproduce; it is printed here with ``<inf.Dec>`` in its place.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

__all__ = ["GoQuantity", "format_resource_list"]

_DEC = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BIN = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_INT64 = (-(2**63), 2**63 - 1)


def _fits(v: int) -> bool:
    return _INT64[0] <= v <= _INT64[1]


@dataclass(slots=True)
class GoQuantity:
    value: int = 0
    scale: int = 0
    #: The exact amount when Go keeps it as an inf.Dec (None on the int64 path).
    dec: Fraction | None = None
    s: str = ""
    format: str = ""

    @classmethod
    def new(cls, value: int, fmt: str) -> GoQuantity:
        """``NewQuantity``."""
        return cls(value, 0, None, "", fmt)

    @classmethod
    def new_milli(cls, value: int, fmt: str) -> GoQuantity:
        """``NewMilliQuantity``."""
        return cls(value, -3, None, "", fmt)

    @classmethod
    def parse(cls, text: str) -> GoQuantity:
        """``ParseQuantity`` of an already validated quantity string."""
        if text == "0":
            return cls(0, 0, None, text, "DecimalSI")
        i, positive = 0, True
        if text[:1] in "+-" and text:
            positive = text[0] != "-"
            i = 1
        body = text[i:]
        j = 0
        while j < len(body) and body[j] == "0":
            j += 1
        k = j
        while k < len(body) and body[k].isdigit():
            k += 1
        num = body[j:k] or "0"
        denom = ""
        if k < len(body) and body[k] == ".":
            m = k + 1
            while m < len(body) and body[m].isdigit():
                m += 1
            denom = body[k + 1 : m]
            k = m
        suffix = body[k:]
        if suffix in _DEC:
            fmt, exponent, base = "DecimalSI", _DEC[suffix], 10
        elif suffix in _BIN:
            fmt, exponent, base = "BinarySI", _BIN[suffix], 2
        else:  # e/E exponent
            fmt, exponent, base = "DecimalExponent", int(suffix[1:]), 10
        mantissa = 1
        if fmt == "BinarySI":
            scale = 0
            if exponent >= 0 and not denom:
                mantissa = 1 << exponent
                precision = 15 - len(num) - int(exponent * 3 / 10) - 1
            else:
                precision = -1
        else:
            scale = exponent
            precision = 18 - (len(num) + len(denom))
        if precision >= 0:
            scale -= len(denom)
            if scale >= -9:
                shifted = num + denom
                value = int(shifted)
                result = value * mantissa
                if _fits(value) and _fits(result):
                    if not positive:
                        result = -result
                    cached = ""
                    if fmt == "BinarySI":
                        if exponent % 10 == 0 and (value & 0x07) != 0:
                            cached = text
                    elif scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0":
                        cached = text
                    return cls(result, scale, None, cached, fmt)
        amount = Fraction(int(num + denom or "0"), 10 ** len(denom))
        amount *= Fraction(10) ** exponent if base == 10 else 2**exponent
        if not positive:
            amount = -amount
        return cls(0, 0, amount, "", fmt)

    def exact(self) -> Fraction:
        if self.dec is not None:
            return self.dec
        return Fraction(self.value) * Fraction(10) ** self.scale

    def sign(self) -> int:
        v = self.exact()
        return (v > 0) - (v < 0)

    def sub(self, y: GoQuantity) -> None:
        """``Quantity.Sub``."""
        self.s = ""
        if self.dec is None and y.dec is None:
            if self.value == 0:
                self.format = y.format
            if self._add_int(-y.value, y.scale):
                return
        elif self.sign() == 0:
            self.format = y.format
        self.dec = self.exact() - y.exact()

    def _add_int(self, bv: int, bs: int) -> bool:
        """``int64Amount.Add`` of ``(bv, bs)``; False on overflow (Go then leaves the
        int64 path)."""
        if not _fits(bv):
            return False
        if bv == 0:
            return True
        if self.value == 0:
            self.value, self.scale = bv, bs
            return True
        if self.scale == bs:
            c = self.value + bv
        elif self.scale > bs:
            c = self.value * 10 ** (self.scale - bs)
            if not _fits(c):
                return False
            c += bv
            if _fits(c):
                self.scale = bs
        else:
            scaled = bv * 10 ** (bs - self.scale)
            if not _fits(scaled):
                return False
            c = self.value + scaled
        if not _fits(c):
            return False
        self.value = c
        return True

    def go_repr(self) -> str:
        dec = "<nil>" if self.dec is None else "<inf.Dec>"
        value, scale = (self.value, self.scale) if self.dec is None else (0, 0)
        return f"{{{{{value} {scale}}} {{{dec}}} {self.s} {self.format}}}"


def format_resource_list(rl: dict[str, GoQuantity]) -> str:
    """``fmt.Sprintf("%v", resourceList)``: keys sorted."""
    return "map[" + " ".join(f"{k}:{rl[k].go_repr()}" for k in sorted(rl)) + "]"
