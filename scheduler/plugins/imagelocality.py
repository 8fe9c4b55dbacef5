"""ImageLocality: favours nodes that already hold the pod's container images
(``pkg/scheduler/framework/plugins/imagelocality``).

For every init and app container whose image (``:latest`` appended when no tag is given) is
among the node's ``status.images`` names, add ``size * (nodes holding the image / all
nodes)``; the sum is clamped to ``[23 MiB, 1000 MiB * number of containers]`` and scaled
linearly to 0..100.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from kube.objects import Pod
from scheduler.framework import MAX_NODE_SCORE, CycleState, Status
from scheduler.plugins.defaults import DEFAULT_PLUGIN_WEIGHTS
from scheduler.snapshot import NodeInfo, Snapshot

__all__ = [
    "MAX_CONTAINER_THRESHOLD",
    "MB",
    "MIN_THRESHOLD",
    "ImageLocalityScorer",
    "calculate_image_priority",
    "normalized_image_name",
]

MB: Final = 1024 * 1024
MIN_THRESHOLD: Final = 23 * MB
MAX_CONTAINER_THRESHOLD: Final = 1000 * MB
_PRE_SCORE_IMAGES_KEY: Final = "PreScoreImageLocality"


def normalized_image_name(name: str) -> str:
    """``normalizedImageName``: append ``:latest`` when the name has no tag."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def calculate_image_priority(sum_scores: int, num_containers: int) -> int:
    """``calculatePriority``: clamp to the thresholds and scale to 0..100."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    span = max_threshold - MIN_THRESHOLD
    if span == 0:
        return 0
    return MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD) // span


class ImageLocalityScorer:
    """The PreScore and Score of the plugin (it has no NormalizeScore)."""

    name = "ImageLocality"
    scores_in_range = True

    def __init__(self, weight: int = DEFAULT_PLUGIN_WEIGHTS["ImageLocality"]) -> None:
        self.weight = weight

    def pre_score(
        self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo], snapshot: Snapshot
    ) -> Status | None:
        # Per container image (in pod order): its spread-scaled score, when some node has it.
        total = len(snapshot.node_info_list)
        scaled: list[tuple[str, int]] = []
        if snapshot.has_images() and total:
            for c in (*pod.init_containers, *pod.containers):
                name = normalized_image_name(c.image)
                found = snapshot.image_state(name)
                if found is not None:
                    size, num_nodes = found
                    scaled.append((name, int(size * (num_nodes / total))))
        num_containers = len(pod.init_containers) + len(pod.containers)
        state.write(_PRE_SCORE_IMAGES_KEY, (tuple(scaled), num_containers))
        return None

    def score_nodes(self, state: CycleState, pod: Pod, node_infos: Sequence[NodeInfo]) -> list[int]:
        scaled, num_containers = state.read(_PRE_SCORE_IMAGES_KEY) or ((), 0)
        if not scaled:
            return [calculate_image_priority(0, num_containers)] * len(node_infos)
        out: list[int] = []
        for ni in node_infos:
            node = ni.node
            total = 0
            if node is not None and node.images:
                names = {n for image in node.images for n in image.names}
                total = sum(score for name, score in scaled if name in names)
            out.append(calculate_image_priority(total, num_containers))
        return out

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[int]) -> None:
        return None
