"""What the transaction handlers share: the coordinator, and Kafka's request-level partition checks."""

from __future__ import annotations

from collections.abc import Iterable

from coordinator.transaction.coordinator import TransactionCoordinator, TxnError
from pykbroker.context import RequestContext
from wire import ErrorCode

__all__ = ["TxnError", "transaction_coordinator", "unknown_partitions", "error_code", "for_version"]


def transaction_coordinator(ctx: RequestContext) -> TransactionCoordinator:
    return ctx.broker.transaction_coordinator


def unknown_partitions(ctx: RequestContext, partitions: Iterable[tuple[str, int]]) -> set[tuple[str, int]]:
    """The partitions the cluster does not have (UNKNOWN_TOPIC_OR_PARTITION)."""
    topics = ctx.metadata.topics
    unknown = set()
    for topic, partition in partitions:
        state = topics.get(topic)
        if state is None or not 0 <= partition < len(state.partitions):
            unknown.add((topic, partition))
    return unknown


def error_code(exc: BaseException) -> int:
    if isinstance(exc, TxnError):
        return exc.error_code
    return getattr(exc, "error_code", ErrorCode.UNKNOWN_SERVER_ERROR)


def for_version(code: int, version: int, first_fenced_version: int) -> int:
    """PRODUCER_FENCED as clients older than ``first_fenced_version`` know it: INVALID_PRODUCER_EPOCH (Kafka)."""
    if code == ErrorCode.PRODUCER_FENCED and version < first_fenced_version:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code
