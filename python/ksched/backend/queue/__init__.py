"""The scheduling queue: activeQ, backoffQ and unschedulablePods."""

from ksched.backend.queue.queue import QueuedPodInfo, SchedulingQueue

__all__ = ["QueuedPodInfo", "SchedulingQueue"]
