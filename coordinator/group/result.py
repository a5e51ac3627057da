"""What a coordinator operation returns: the records to append and the response (Kafka's CoordinatorResult)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from coordinator.group.records import CoordinatorRecord

__all__ = ["CoordinatorResult", "RequestInfo"]

T = TypeVar("T")


@dataclass
class CoordinatorResult(Generic[T]):
    """Records to append (as one batch), the response, and what to do once the append is done.

    ``replay``: whether the runtime replays ``records`` into the shard after they are appended (True for
    record-driven state; False when the operation has already updated the in-memory state itself, as
    classic groups do, so the records are only the durable snapshot).
    ``on_appended(error)``: called on the shard's task after the append, with None or the exception.
    ``producer_id``/``producer_epoch``: set for TxnOffsetCommit, whose records are appended as a
    transactional batch of that producer and stay pending until its transaction ends.
    """

    records: list[CoordinatorRecord] = field(default_factory=list)
    response: T | None = None
    on_appended: Callable[[BaseException | None], None] | None = None
    replay: bool = True
    producer_id: int = -1
    producer_epoch: int = -1


@dataclass(frozen=True)
class RequestInfo:
    """What an operation knows about the request beyond its body."""

    api_version: int = 0
    client_id: str = ""
    client_host: str = ""
    # The subset of the given topic names the request's principal may DESCRIBE (Kafka filters a member's
    # regex resolution through the authorizer with the heartbeat's context); None: no authorizer, all.
    describable_topics: Callable[[Iterable[str]], set[str]] | None = field(default=None, compare=False)
