"""Test helpers shipped with ksched.

:mod:`ksched.testing.controlplane` starts a real kube-apiserver v1.36 + etcd v3.6 on
loopback (built from Go modules by ``hack/build-control-plane.sh``). It needs the
``cryptography`` package (the ``dev`` extra); import it explicitly.
"""
