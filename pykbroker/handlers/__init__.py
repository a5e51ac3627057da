"""One module per API, grouped by family; each registers its handler with ``pykbroker.registry.handler``.

``SERVED_APIS`` lists every API the broker serves, its version range and its module. ApiVersions is
answered from this table, so a module is imported only when its API is first requested
(``Registry.load``): importing them all would double the broker's start-up time. Adding an API is adding a
module and its line here; the registry refuses a module whose ``@handler`` declares another range, and
tests/pykbroker/test_registry.py checks the whole table against the modules.
"""

from wire import ApiKey

# (api key, min version, max version, module), by api key.
SERVED_APIS: tuple[tuple[ApiKey, int, int, str], ...] = (
    (ApiKey.PRODUCE, 0, 13, "pykbroker.handlers.data.produce"),
    (ApiKey.FETCH, 4, 18, "pykbroker.handlers.data.fetch"),
    (ApiKey.LIST_OFFSETS, 1, 10, "pykbroker.handlers.data.list_offsets"),
    (ApiKey.METADATA, 0, 13, "pykbroker.handlers.metadata"),
    (ApiKey.OFFSET_COMMIT, 2, 9, "pykbroker.handlers.group.offset_commit"),
    (ApiKey.OFFSET_FETCH, 1, 9, "pykbroker.handlers.group.offset_fetch"),
    (ApiKey.FIND_COORDINATOR, 0, 6, "pykbroker.handlers.group.find_coordinator"),
    (ApiKey.JOIN_GROUP, 0, 9, "pykbroker.handlers.group.join_group"),
    (ApiKey.HEARTBEAT, 0, 4, "pykbroker.handlers.group.heartbeat"),
    (ApiKey.LEAVE_GROUP, 0, 5, "pykbroker.handlers.group.leave_group"),
    (ApiKey.SYNC_GROUP, 0, 5, "pykbroker.handlers.group.sync_group"),
    (ApiKey.DESCRIBE_GROUPS, 0, 6, "pykbroker.handlers.group.describe_groups"),
    (ApiKey.LIST_GROUPS, 0, 5, "pykbroker.handlers.group.list_groups"),
    (ApiKey.SASL_HANDSHAKE, 0, 1, "pykbroker.handlers.sasl"),
    (ApiKey.API_VERSIONS, 0, 4, "pykbroker.handlers.api_versions"),
    (ApiKey.CREATE_TOPICS, 2, 7, "pykbroker.handlers.admin.create_topics"),
    (ApiKey.DELETE_TOPICS, 1, 6, "pykbroker.handlers.admin.delete_topics"),
    (ApiKey.DELETE_RECORDS, 0, 2, "pykbroker.handlers.admin.delete_records"),
    (ApiKey.INIT_PRODUCER_ID, 0, 5, "pykbroker.handlers.txn.init_producer_id"),
    (ApiKey.OFFSET_FOR_LEADER_EPOCH, 2, 4, "pykbroker.handlers.data.offset_for_leader_epoch"),
    (ApiKey.ADD_PARTITIONS_TO_TXN, 0, 5, "pykbroker.handlers.txn.add_partitions_to_txn"),
    (ApiKey.ADD_OFFSETS_TO_TXN, 0, 4, "pykbroker.handlers.txn.add_offsets_to_txn"),
    (ApiKey.END_TXN, 0, 5, "pykbroker.handlers.txn.end_txn"),
    (ApiKey.WRITE_TXN_MARKERS, 1, 1, "pykbroker.handlers.txn.write_txn_markers"),
    (ApiKey.TXN_OFFSET_COMMIT, 0, 5, "pykbroker.handlers.txn.txn_offset_commit"),
    (ApiKey.DESCRIBE_ACLS, 1, 3, "pykbroker.handlers.acls"),
    (ApiKey.CREATE_ACLS, 1, 3, "pykbroker.handlers.acls"),
    (ApiKey.DELETE_ACLS, 1, 3, "pykbroker.handlers.acls"),
    (ApiKey.DESCRIBE_CONFIGS, 1, 4, "pykbroker.handlers.admin.describe_configs"),
    (ApiKey.ALTER_CONFIGS, 0, 2, "pykbroker.handlers.admin.alter_configs"),
    (ApiKey.DESCRIBE_LOG_DIRS, 1, 4, "pykbroker.handlers.admin.describe_log_dirs"),
    (ApiKey.SASL_AUTHENTICATE, 0, 2, "pykbroker.handlers.sasl"),
    (ApiKey.CREATE_PARTITIONS, 0, 3, "pykbroker.handlers.admin.create_partitions"),
    (ApiKey.DELETE_GROUPS, 0, 2, "pykbroker.handlers.group.delete_groups"),
    (ApiKey.ELECT_LEADERS, 0, 2, "pykbroker.handlers.admin.elect_leaders"),
    (ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1, "pykbroker.handlers.admin.alter_configs"),
    (ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1, "pykbroker.handlers.admin.partition_reassignments"),
    (ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0, "pykbroker.handlers.admin.partition_reassignments"),
    (ApiKey.OFFSET_DELETE, 0, 0, "pykbroker.handlers.group.offset_delete"),
    (ApiKey.DESCRIBE_CLIENT_QUOTAS, 0, 1, "pykbroker.handlers.admin.client_quotas"),
    (ApiKey.ALTER_CLIENT_QUOTAS, 0, 1, "pykbroker.handlers.admin.client_quotas"),
    (ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0, "pykbroker.handlers.admin.scram_credentials"),
    (ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0, "pykbroker.handlers.admin.scram_credentials"),
    (ApiKey.DESCRIBE_QUORUM, 0, 2, "pykbroker.handlers.describe_quorum"),
    (ApiKey.UPDATE_FEATURES, 0, 2, "pykbroker.handlers.admin.update_features"),
    (ApiKey.DESCRIBE_CLUSTER, 0, 2, "pykbroker.handlers.describe_cluster"),
    (ApiKey.DESCRIBE_PRODUCERS, 0, 0, "pykbroker.handlers.txn.describe_producers"),
    (ApiKey.DESCRIBE_TRANSACTIONS, 0, 0, "pykbroker.handlers.txn.describe_transactions"),
    (ApiKey.LIST_TRANSACTIONS, 0, 2, "pykbroker.handlers.txn.list_transactions"),
    (ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1, "pykbroker.handlers.group.consumer_group_heartbeat"),
    (ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1, "pykbroker.handlers.group.consumer_group_describe"),
    (ApiKey.LIST_CONFIG_RESOURCES, 0, 1, "pykbroker.handlers.admin.list_config_resources"),
    (ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, 0, "pykbroker.handlers.admin.describe_topic_partitions"),
    (ApiKey.SHARE_GROUP_HEARTBEAT, 1, 1, "pykbroker.handlers.share.share_group_heartbeat"),
    (ApiKey.SHARE_GROUP_DESCRIBE, 1, 1, "pykbroker.handlers.share.share_group_describe"),
    (ApiKey.SHARE_FETCH, 1, 2, "pykbroker.handlers.share.share_fetch"),
    (ApiKey.SHARE_ACKNOWLEDGE, 1, 2, "pykbroker.handlers.share.share_acknowledge"),
    (ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, 1, "pykbroker.handlers.share.share_group_offsets"),
    (ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, 0, "pykbroker.handlers.share.share_group_offsets"),
    (ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, 0, "pykbroker.handlers.share.share_group_offsets"),
)
