"""Everything that talks to the Kubernetes API server.

``informer`` works over any :class:`ksched.cluster.ClusterAPI` (the real client or the
embedded cluster).
"""
