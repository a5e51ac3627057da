"""Idempotence and transactions: one module per API (InitProducerId, AddPartitionsToTxn, EndTxn, ...).

Each module is imported on its API's first request (``pykbroker.handlers.SERVED_APIS``).
"""
