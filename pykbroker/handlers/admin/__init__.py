"""Topic and config administration: one module per API (CreateTopics, DescribeConfigs, ...).

Each module is imported on its API's first request (``pykbroker.handlers.SERVED_APIS``).
"""
