"""Differential conformance: ksched against kube-scheduler v1.36.5's own code.

Three parts, run per case:

* :mod:`tests.conformance.generate`: seeded random cases (a cluster, a pending pod and a
  ``KubeSchedulerConfiguration``) covering every field the built-in plugins read;
* :mod:`tests.conformance.upstream`: the ``ksched-conformance`` Go program
  (``tests/conformance/harness``), which stores the objects as the API server would and
  runs one real scheduling cycle of upstream's scheduler on a fake clientset, reporting
  what it did;
* :mod:`tests.conformance.production`: the same objects and configuration through
  ksched's production path (what ``ksched run`` does for one attempt) on the embedded
  cluster.

:mod:`tests.conformance.compare` compares the two reports aspect by aspect, with
upstream's random choices normalized; :mod:`tests.conformance.minimize` shrinks a
disagreeing case to a small JSON reproduction, and ``python -m tests.conformance``
(``make conformance``) runs many cases and writes the summary.
"""
