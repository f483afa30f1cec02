"""``ksched explain``: why a pod is pending, why not node X, why node Y.

:func:`explain_pod` runs one scheduling attempt of a pod with the scheduler's own code
and configuration, binds nothing, and reports every node's Filter verdict and Score
breakdown (:mod:`ksched.explain.engine`); :mod:`ksched.explain.whatif` adds, for a pod
no node fits, the smallest changes that would make it fit; :mod:`ksched.explain.render`
prints it. The command line is :mod:`ksched.commands.explain`.
"""

from ksched.explain.engine import ExplainError, explain_pod
from ksched.explain.model import Explanation, NodeVerdict, PluginScore, Suggestion

__all__ = ["ExplainError", "Explanation", "NodeVerdict", "PluginScore", "Suggestion", "explain_pod"]
