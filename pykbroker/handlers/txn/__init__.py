"""Idempotence and transactions: InitProducerId, and (later) the transaction APIs."""
