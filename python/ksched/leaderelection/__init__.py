"""Leader election for ``ksched run``: one of several replicas schedules.

* :mod:`.lease` — the Lease lock and the leader election record (MicroTime text);
* :mod:`.elector` — client-go's acquire / renew / release loops on asyncio, the healthz
  watchdog, ``leader_election_master_status``;
* :mod:`.candidate` — the LeaseCandidate of coordinated leader election.

All API I/O goes through :class:`ksched.cluster.ClusterAPI` (``get_lease``,
``create_lease``, ``update_lease``), so the same code runs against a kube-apiserver and
against the embedded cluster. ``ksched run`` (:mod:`ksched.run`) wires the callbacks as
kube-scheduler does: start scheduling when leading, exit non-zero when the lease is
lost, release the lease after a graceful stop.
"""

from ksched.leaderelection.candidate import LeaseCandidate
from ksched.leaderelection.elector import (
    JITTER_FACTOR,
    LeaderElector,
    LeaderMetrics,
    RealClock,
    lease_event_recorder,
)
from ksched.leaderelection.lease import (
    LeaderElectionRecord,
    LeaseLock,
    format_micro_time,
    parse_micro_time,
)

__all__ = [
    "JITTER_FACTOR",
    "LeaderElectionRecord",
    "LeaderElector",
    "LeaderMetrics",
    "LeaseCandidate",
    "LeaseLock",
    "RealClock",
    "format_micro_time",
    "lease_event_recorder",
    "parse_micro_time",
]
