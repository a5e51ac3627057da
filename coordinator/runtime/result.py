"""What a coordinator operation returns: the records to append and the response (Kafka's CoordinatorResult)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["CoordinatorRecord", "CoordinatorResult"]

T = TypeVar("T")


class CoordinatorRecord(Protocol):
    """A record of a coordinator's internal topic: it knows its key and value bytes."""

    def encode(self) -> tuple[bytes | None, bytes | None]: ...


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

    records: Sequence[Any] = field(default_factory=list)
    response: T | None = None
    on_appended: Callable[[BaseException | None], None] | None = None
    replay: bool = True
    producer_id: int = -1
    producer_epoch: int = -1
