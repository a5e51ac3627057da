"""Consumer groups and committed offsets: one module per API, each a thin layer over the group coordinator.

FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, OffsetDelete,
DescribeGroups, ListGroups, DeleteGroups, ConsumerGroupHeartbeat and ConsumerGroupDescribe (Kafka 4.4's
version ranges); each module is imported on its API's first request (``pykbroker.handlers.SERVED_APIS``).
"""
