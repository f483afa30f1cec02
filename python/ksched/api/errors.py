"""Errors raised while turning API-server JSON into ksched objects.

Design: the scheduler must never crash on a malformed object. Every parser in
:mod:`ksched.api` therefore raises exactly one of two exception types, both subclasses
of :class:`ValueError`, and both carry enough structure for the caller to report the
problem (event + log + metric) and skip the object:

* :class:`QuantityError` comes from :func:`ksched.api.quantity.parse_quantity`. It knows
  the offending text and, when the caller passed it, the JSON path of the field.
* :class:`InvalidObjectError` comes from ``Pod.from_dict`` / ``Node.from_dict``. It names
  the kind, the object (``namespace/name`` for pods, ``name`` for nodes), the JSON path
  of the bad field and a human message, and renders as one line::

      Pod default/web-1: spec.containers[0].resources.requests.cpu: quantities must \
match the regular expression '...' (got "12x")

Field paths use dots for plain keys and ``[i]`` for list indexes; map keys that are not
plain identifiers (``nvidia.com/gpu``, ``app.kubernetes.io/name``) are written in
brackets so the path stays unambiguous: ``metadata.labels[app.kubernetes.io/name]``.
"""

from __future__ import annotations

import json

import orjson

__all__ = ["InvalidObjectError", "QuantityError", "quote"]


def quote(text: str) -> str:
    """Return ``text`` as a double-quoted JSON string (escapes included). A lone
    surrogate (``json.loads`` lets ``"\\ud800"`` through) is written as its escape."""
    try:
        return orjson.dumps(text).decode()
    except TypeError:
        return json.dumps(text)


class QuantityError(ValueError):
    """A resource quantity could not be parsed.

    Attributes:
        text: the rejected input, as text (``repr`` of a non-string input).
        message: what is wrong, without the text or the field.
        field: JSON path of the quantity, or ``""`` when the caller did not say.
    """

    def __init__(self, text: str, message: str, field: str = "") -> None:
        self.text = text
        self.message = message
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        detail = f"{self.message} (got {quote(self.text)})"
        return f"{self.field}: {detail}" if self.field else detail

    def __reduce__(self) -> tuple[type[QuantityError], tuple[str, str, str]]:
        return (QuantityError, (self.text, self.message, self.field))


class InvalidObjectError(ValueError):
    """An API object (Pod, Node) is malformed.

    Attributes:
        kind: ``"Pod"`` or ``"Node"``.
        name: ``"namespace/name"`` for pods, ``"name"`` for nodes (``"<unknown>"`` when
            the object's own name could not be read).
        field: JSON path of the offending field, e.g.
            ``spec.containers[0].resources.requests.cpu``; ``""`` for the whole object.
        message: what is wrong with that field.
    """

    def __init__(self, kind: str, name: str, field: str, message: str) -> None:
        self.kind = kind
        self.name = name
        self.field = field
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.field:
            return f"{self.kind} {self.name}: {self.field}: {self.message}"
        return f"{self.kind} {self.name}: {self.message}"

    def __reduce__(self) -> tuple[type[InvalidObjectError], tuple[str, str, str, str]]:
        return (InvalidObjectError, (self.kind, self.name, self.field, self.message))
