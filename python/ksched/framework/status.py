"""Plugin statuses: upstream's ``Code`` values and what each one means to the runtime.

* ``SUCCESS`` - the plugin ran and the pod may proceed. Plugins return ``None`` for
  success on the hot path; the runtime treats ``None`` and a success status alike.
* ``ERROR`` - an internal error (bad input, failed API call). The attempt fails with
  ``scheduler_schedule_attempts_total{result="error"}`` and the pod goes to the *error*
  backoff; no queueing hint is consulted.
* ``UNSCHEDULABLE`` - the pod does not fit here now; preemption (PostFilter) may help.
* ``UNSCHEDULABLE_AND_UNRESOLVABLE`` - it does not fit and preemption cannot change
  that (e.g. node selector mismatch): PostFilter skips such nodes.
* ``WAIT`` - Permit only: hold the pod in the waiting-pods map until allowed, rejected
  or timed out.
* ``SKIP`` - PreFilter/PreScore: the plugin has nothing to do for this pod, skip its
  Filter/Score; Bind: let the next bind plugin bind the pod.
* ``PENDING`` - the pod waits for something outside the scheduler (e.g. a resource
  claim being allocated). Like Unschedulable, but a queueing hint that answers Queue
  for a plugin that returned Pending sends the pod straight to activeQ, skipping
  backoff, because the wait was not the pod's fault.

Unschedulable, UnschedulableAndUnresolvable and Pending are *rejections*
(:meth:`Status.is_rejected`): the pod's PodScheduled condition becomes False with reason
``Unschedulable``; an Error gives reason ``SchedulerError``.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

__all__ = ["Code", "Status", "as_status", "is_success"]


class Code(enum.StrEnum):
    """Upstream's status codes, with upstream's ``String()`` as value."""

    SUCCESS = "Success"
    ERROR = "Error"
    UNSCHEDULABLE = "Unschedulable"
    UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"
    WAIT = "Wait"
    SKIP = "Skip"
    PENDING = "Pending"


_REJECTED = frozenset((Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING))


class Status:
    """A plugin's verdict: a code, reasons, the plugin that produced it, and for errors
    the exception."""

    __slots__ = ("code", "error", "plugin", "reasons")

    def __init__(
        self,
        code: Code = Code.SUCCESS,
        *reasons: str,
        plugin: str = "",
        error: BaseException | None = None,
    ) -> None:
        self.code = code
        self.reasons: Sequence[str] = reasons
        self.plugin = plugin
        self.error = error

    @classmethod
    def from_error(cls, error: BaseException, plugin: str = "") -> Status:
        return cls(Code.ERROR, str(error), plugin=plugin, error=error)

    def with_plugin(self, plugin: str) -> Status:
        self.plugin = plugin
        return self

    @property
    def message(self) -> str:
        """The reasons joined by ", " (upstream ``Status.Message``)."""
        return ", ".join(self.reasons)

    def is_success(self) -> bool:
        return self.code is Code.SUCCESS

    def is_wait(self) -> bool:
        return self.code is Code.WAIT

    def is_skip(self) -> bool:
        return self.code is Code.SKIP

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending."""
        return self.code in _REJECTED

    def __repr__(self) -> str:
        plugin = f" plugin={self.plugin!r}" if self.plugin else ""
        return f"Status({self.code.value}{plugin}: {self.message!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return (self.code, tuple(self.reasons), self.plugin) == (
            other.code,
            tuple(other.reasons),
            other.plugin,
        )

    def __hash__(self) -> int:
        return hash((self.code, tuple(self.reasons), self.plugin))


def is_success(status: Status | None) -> bool:
    """``None`` counts as success, as a nil ``*Status`` does upstream."""
    return status is None or status.code is Code.SUCCESS


def as_status(status: Status | None) -> Status:
    return status if status is not None else Status()


def code_of(status: Status | None) -> Code:
    return Code.SUCCESS if status is None else status.code
