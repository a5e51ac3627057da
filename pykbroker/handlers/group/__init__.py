"""Consumer groups and committed offsets: one module per API, each a thin layer over the group coordinator.

Importing this package registers FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
OffsetCommit, OffsetFetch, OffsetDelete, DescribeGroups, ListGroups, DeleteGroups,
ConsumerGroupHeartbeat and ConsumerGroupDescribe (Kafka 4.1's version ranges).
"""

from pykbroker.handlers.group import (  # noqa: F401
    consumer_group_describe,
    consumer_group_heartbeat,
    delete_groups,
    describe_groups,
    find_coordinator,
    heartbeat,
    join_group,
    leave_group,
    list_groups,
    offset_commit,
    offset_delete,
    offset_fetch,
    sync_group,
)
