"""The tool commands beside ``ksched run``: ``explain``, ``record`` and ``replay``.

Each module adds its sub-command to the ``ksched`` parser (``add_parser``) and runs it
(``main``); :mod:`ksched.commands.common` holds what they share: loading a
KubeSchedulerConfiguration as ``ksched run`` does, and opening the cluster a command
reads (a live API server through the read-only client, a recording, or a cluster
generated from a workload file).
"""
