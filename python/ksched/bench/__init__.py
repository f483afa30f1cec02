"""Benchmarks of ksched, alone and side by side with upstream kube-scheduler.

* :mod:`ksched.bench.workload` — the workload files of ``benches/workloads/``
  (scheduler_perf test cases as data), scaled by ``--scale``/``--nodes``/``--pods``;
* :mod:`ksched.bench.embedded` — a workload on the embedded cluster (core throughput);
* :mod:`ksched.bench.e2e` — a workload against a real kube-apiserver, with ksched
  (``ksched run`` in a subprocess) and kube-scheduler v1.36 one after the other on the
  same apiserver and the same nodes;
* :mod:`ksched.bench.placement` — the final placement of each run and how they compare;
* :mod:`ksched.bench.report` — results, ratios, the table, the JSON and the PNG;
* :mod:`ksched.bench.command` — ``ksched bench``.

Nothing here is imported by the scheduler; the package sits beside ``ksched.run`` and
``ksched.simulate`` (it uses both layers below it and the real client).
"""
