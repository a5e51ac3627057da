"""The groups of one __consumer_offsets partition by id, with the typed lookups every part of the shard uses.

``GroupMetadataManager`` owns it and hands it to its collaborators (the classic and consumer protocols), which
read and change it on the shard's task; nothing else holds it.
"""

from __future__ import annotations

from collections.abc import Callable

from coordinator.group.classic_group import ClassicGroup
from coordinator.group.consumer_group import ConsumerGroup
from coordinator.runtime.clock import Clock
from coordinator.runtime.errors import ApiError
from wire import ErrorCode

__all__ = ["Group", "GroupMap"]

Group = ClassicGroup | ConsumerGroup


class GroupMap(dict[str, Group]):
    """Group id -> classic or consumer group; ``clock`` stamps a classic group created by a lookup.

    ``other_type(group_id)``: a group of another kind (a streams group, kept by the shard elsewhere) holds the id;
    the classic and consumer protocols refuse it as Kafka does. ``release_empty_other(group_id)``: that group, if
    empty, gives way to a classic JoinGroup: removed at once, its tombstones returned (None: it cannot)."""

    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self.clock = clock
        self.other_type: Callable[[str], bool] = lambda _: False
        self.release_empty_other: Callable[[str], list | None] = lambda _: None

    def group(self, group_id: str) -> Group:
        g = self.get(group_id)
        if g is None:
            raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        return g

    def classic_group(self, group_id: str) -> ClassicGroup:
        g = self.group(group_id)
        if not isinstance(g, ClassicGroup):
            raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a classic group.")
        return g

    def consumer_group(self, group_id: str) -> ConsumerGroup:
        g = self.group(group_id)
        if not isinstance(g, ConsumerGroup):
            raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        return g

    def get_or_create_classic_group(self, group_id: str, create: bool) -> ClassicGroup:
        g = self.get(group_id)
        if g is None:
            if not create:
                raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Classic group {group_id} not found.")
            g = self[group_id] = ClassicGroup(group_id, self.clock.now_ms())
            return g
        if not isinstance(g, ClassicGroup):
            raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a classic group.")
        return g
