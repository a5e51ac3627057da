"""The group coordinator: consumer groups (classic protocol and KIP-848) and committed offsets.

State is the replay of the records of ``__consumer_offsets`` (see ``records``), one single-writer
shard per partition (``runtime``). Modules:

- ``coordinator`` — ``GroupCoordinator``, the service request handlers call;
- ``log`` — ``CoordinatorLog``, the interface to a ``__consumer_offsets`` partition, and the
  in-memory implementation; ``partition_log`` — the implementation over the replica manager;
- ``runtime`` — shard tasks, queues, appends, replay, timers; ``shard`` — one partition's state;
- ``group_metadata_manager`` + ``classic_protocol`` + ``consumer_protocol`` — groups and membership;
- ``offsets`` — committed offsets; ``records`` — the record formats (byte-compatible with Kafka);
- ``classic_group`` / ``consumer_group`` — the group state machines; ``reconciliation`` and
  ``assignors`` — KIP-848 assignment; ``partitioner`` — group id -> partition;
- ``clock`` / ``timer`` — injected time; ``config`` — ``group.*`` / ``offsets.*`` settings.
"""

from coordinator.group.clock import Clock, FakeClock, SystemClock
from coordinator.group.config import GroupCoordinatorConfig
from coordinator.group.coordinator import GroupCoordinator
from coordinator.group.errors import ApiError, CoordinatorLogError
from coordinator.group.log import (
    CoordinatorLog,
    CoordinatorLogFactory,
    InMemoryCoordinatorLog,
    InMemoryCoordinatorLogs,
)
from coordinator.group.partitioner import GROUP_METADATA_TOPIC_NAME, partition_for
from coordinator.group.result import RequestInfo
from coordinator.group.topics import MetadataStoreTopics, StaticTopics, TopicInfo, TopicsImage

__all__ = [
    "ApiError",
    "Clock",
    "CoordinatorLog",
    "CoordinatorLogError",
    "CoordinatorLogFactory",
    "FakeClock",
    "GROUP_METADATA_TOPIC_NAME",
    "GroupCoordinator",
    "GroupCoordinatorConfig",
    "InMemoryCoordinatorLog",
    "InMemoryCoordinatorLogs",
    "MetadataStoreTopics",
    "RequestInfo",
    "StaticTopics",
    "SystemClock",
    "TopicInfo",
    "TopicsImage",
    "partition_for",
]
