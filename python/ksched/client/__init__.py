"""Everything that talks to the Kubernetes API server.

* ``informer`` — list-and-watch informers over any :class:`ksched.cluster.ClusterAPI`
  (the real client below or the embedded cluster);
* ``kubeconfig`` — kubeconfig / in-cluster configuration and credentials, through the
  ``kubernetes`` package's loaders;
* ``ratelimit`` — the ``clientConnection.qps/burst`` token bucket;
* ``rest`` — async HTTP (aiohttp) with orjson on raw bytes, error mapping, retries;
* ``watching`` — watch streams read as raw JSON lines;
* ``api`` — :class:`~ksched.client.api.KubeClusterAPI`, the real ClusterAPI.

This package's ``__init__`` imports nothing: the scheduler imports ``informer`` alone
and must not pull aiohttp or kubernetes in with it.
"""
