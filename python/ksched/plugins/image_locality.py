"""ImageLocality (Score only): prefers nodes holding the pod's images, scaled by how many
nodes hold them (23MB..1000MB per container thresholds). Default weight 1.

Kernel in ``rust/plugins/image_locality.rs``. A Score-only plugin rejects nothing, so it
registers no events.
"""

from __future__ import annotations

from ksched.backend.queue.cluster_event import ClusterEventWithHint

NAME = "ImageLocality"
DEFAULT_WEIGHT = 1


def events_to_register() -> list[ClusterEventWithHint]:
    return []
