"""The workload-aware plugins a profile may enable, by name: factories from the
plugin's ``pluginConfig`` args (JSON shape, defaulted and validated by the config
layer) to a plugin instance, for :func:`ksched.profiles.build_profiles`.

* ``GangScheduling`` (in-tree, v1.36): :mod:`ksched.plugins.gang_scheduling`;
* ``Coscheduling`` and ``CapacityScheduling`` (scheduler-plugins):
  :mod:`ksched.plugins.coscheduling`, :mod:`ksched.plugins.capacity_scheduling`.

A factory raises ``ValueError`` with upstream's message for args the plugin's own
validation rejects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from ksched.plugins.capacity_scheduling import CapacityScheduling
from ksched.plugins.coscheduling import Coscheduling
from ksched.plugins.gang_scheduling import GangScheduling

__all__ = ["WORKLOAD_PLUGINS"]

Factory = Callable[[Mapping[str, Any] | None], Any]

WORKLOAD_PLUGINS: Final[Mapping[str, Factory]] = {
    "GangScheduling": lambda args: GangScheduling(),
    "Coscheduling": Coscheduling.from_args,
    "CapacityScheduling": lambda args: CapacityScheduling(),
}
