"""Running coroutines on uvloop where it is installed, without event-loop policies."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        return None
    return uvloop.new_event_loop


def run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on uvloop (``asyncio.Runner`` takes the factory on 3.11)."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(coro)
