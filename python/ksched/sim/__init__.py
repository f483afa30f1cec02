"""The embedded in-memory cluster and workload generators.

:class:`InMemoryCluster` implements :class:`ksched.cluster.ClusterAPI` with the API
server's observable behaviour (resource versions, watch from a version, 410 Gone for a
compacted version, binding conflicts), so the scheduler runs on it unchanged. It serves
``ksched simulate``, unit tests and core benchmarks; integration tests use a real
kube-apiserver instead.
"""

from ksched.sim.cluster import InMemoryCluster

__all__ = ["InMemoryCluster"]
