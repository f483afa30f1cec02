"""kube-scheduler's command line, for the ``kube-scheduler`` command and ``ksched run``.

* :mod:`.pflag` — a parser with spf13/pflag's semantics and help layout;
* :mod:`.flags` — kube-scheduler v1.36's 62 flags and how they change the configuration
  (``ksched shadow`` adds ``--shadow-scheduler-name`` in a section of its own).
"""

from ksched.options.flags import (
    COMMAND,
    LONG_HELP,
    SHADOW_COMMAND,
    SHADOW_HELP,
    Options,
    in_cluster,
    parse,
    resolve_gates,
)
from ksched.options.pflag import FlagError, HelpRequested

__all__ = [
    "COMMAND",
    "LONG_HELP",
    "SHADOW_COMMAND",
    "SHADOW_HELP",
    "FlagError",
    "HelpRequested",
    "Options",
    "in_cluster",
    "parse",
    "resolve_gates",
]
