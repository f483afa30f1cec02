"""ksched: a drop-in Kubernetes scheduler with kube-scheduler v1.36 semantics.

Python owns configuration, profile routing, the scheduling queue, informers, the cache and
binding; the Rust extension :mod:`ksched._core` holds the node snapshot as columnar arrays
and runs the built-in Filter/Score plugins over all nodes in parallel.
"""

__version__ = "0.1.0"
