"""The Kubernetes data model as ksched sees it: quantities, resources, pods and nodes.

Everything here is pure data and parsing, with no I/O: the client hands in the dicts
``orjson.loads`` produced from the API server, and gets back slotted objects whose
resource fields are already in kube-scheduler's integer units (millicores, bytes,
counts). Malformed input raises :class:`InvalidObjectError` / :class:`QuantityError`
naming the object and the JSON path of the bad field, so callers can report and skip it.
"""

from ksched.api.errors import InvalidObjectError, QuantityError
from ksched.api.node import Node, Taint
from ksched.api.pod import Pod, Toleration
from ksched.api.quantity import Quantity, parse_quantity
from ksched.api.resources import (
    is_extended_resource_name,
    is_scalar_resource_name,
    resource_amount,
)

__all__ = [
    "InvalidObjectError",
    "Node",
    "Pod",
    "Quantity",
    "QuantityError",
    "Taint",
    "Toleration",
    "is_extended_resource_name",
    "is_scalar_resource_name",
    "parse_quantity",
    "resource_amount",
]
