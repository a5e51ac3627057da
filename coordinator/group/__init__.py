"""The group coordinator: consumer groups (classic protocol and KIP-848) and committed offsets.

State is the replay of the records of ``__consumer_offsets`` (see ``records``), one single-writer
shard per partition on the shared ``coordinator.runtime``. Modules:

- ``coordinator`` — ``GroupCoordinator``, the service request handlers call;
- ``shard`` — one partition's state and operations;
- ``group_metadata_manager`` + ``classic_protocol`` + ``consumer_protocol`` — groups and membership;
- ``offsets`` — committed offsets; ``records`` — the record formats (byte-compatible with Kafka);
- ``classic_group`` / ``consumer_group`` — the group state machines; ``reconciliation`` and
  ``assignors`` — KIP-848 assignment; ``partitioner`` — group id -> partition;
- ``config`` — ``group.*`` / ``offsets.*`` settings; ``request_info`` — what an operation knows of
  the request.

The runtime's clock, logs and errors are re-exported for the handlers and tests.
"""

from coordinator.group.config import GroupCoordinatorConfig
from coordinator.group.coordinator import GroupCoordinator
from coordinator.group.partitioner import GROUP_METADATA_TOPIC_NAME, partition_for
from coordinator.group.request_info import RequestInfo
from coordinator.group.topics import MetadataStoreTopics, StaticTopics, TopicInfo, TopicsImage
from coordinator.runtime.clock import Clock, FakeClock, SystemClock
from coordinator.runtime.errors import ApiError, CoordinatorLogError
from coordinator.runtime.log import (
    CoordinatorLog,
    CoordinatorLogFactory,
    InMemoryCoordinatorLog,
    InMemoryCoordinatorLogs,
)

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
