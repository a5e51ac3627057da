"""Incremental fetch sessions (KIP-227), as Kafka's FetchSessionCache.

A client opens a session with a full fetch (session_id=0, epoch=0); the broker answers with a session
id. Later fetches carry only changed partitions (epoch 1, 2, ...) and ``forgotten_topics_data``, and the
broker answers with only the partitions whose data, offsets or error changed since the last answer.
``epoch=-1`` (FINAL_EPOCH) closes a session; ``session_id=0, epoch=-1`` is a sessionless full fetch.

Pure bookkeeping: no I/O. Used from the event loop only (single writer).
"""

from __future__ import annotations

import random
import uuid
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from wire import ErrorCode

__all__ = ["CachedPartition", "FetchContext", "FetchSession", "FetchSessionCache", "INITIAL_EPOCH",
           "FINAL_EPOCH"]

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
INVALID_SESSION_ID = 0
# Kafka's max.incremental.fetch.session.cache.slots default.
DEFAULT_CACHE_SLOTS = 1000


@dataclass(eq=False)
class CachedPartition:
    """What the session knows of one partition: the client's fetch position and what we last told it."""

    topic: str | None  # None: a topic id the broker does not know (yet); resolved on a later fetch, as Kafka
    partition: int
    topic_id: uuid.UUID
    fetch_offset: int
    max_bytes: int
    log_start_offset: int = -1
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    # Last values sent to the client; -1 means "never sent".
    high_watermark: int = -1
    last_stable_offset: int = -1
    sent_log_start_offset: int = -1

    def key(self, uses_topic_ids: bool) -> tuple[object, int]:
        """The session's key: (topic id, partition) when the session uses topic ids, as Kafka's TopicIdPartition."""
        return (self.topic_id, self.partition) if uses_topic_ids else (self.topic, self.partition)

    def update_request(self, fetch_offset: int, max_bytes: int, log_start_offset: int, current_leader_epoch: int,
                       last_fetched_epoch: int) -> None:
        self.fetch_offset = fetch_offset
        self.max_bytes = max_bytes
        self.log_start_offset = log_start_offset
        self.current_leader_epoch = current_leader_epoch
        self.last_fetched_epoch = last_fetched_epoch

    def needs_response(self, *, has_records: bool, error_code: int, high_watermark: int, last_stable_offset: int,
                       log_start_offset: int) -> bool:
        """Whether an incremental response must carry this partition; records what is sent."""
        changed = (
            has_records
            or error_code != ErrorCode.NONE
            or high_watermark != self.high_watermark
            or last_stable_offset != self.last_stable_offset
            or log_start_offset != self.sent_log_start_offset
        )
        if changed:
            self.high_watermark = high_watermark
            self.last_stable_offset = last_stable_offset
            self.sent_log_start_offset = log_start_offset
        return changed


@dataclass(eq=False)
class FetchSession:
    """One incremental fetch session: its id, next expected epoch and partitions in fetch order."""

    session_id: int
    epoch: int
    partitions: OrderedDict[tuple[object, int], CachedPartition] = field(default_factory=OrderedDict)
    uses_topic_ids: bool = False


@dataclass(eq=False)
class FetchContext:
    """How to build one fetch response.

    ``partitions`` are the partitions to read, in order. For an incremental fetch ``session`` is set
    and the response keeps only partitions for which ``CachedPartition.needs_response`` says so.
    ``error`` is a top-level error (the response then carries no partitions).
    """

    partitions: list[CachedPartition]
    session: FetchSession | None = None
    response_session_id: int = INVALID_SESSION_ID
    incremental: bool = False
    error: int = ErrorCode.NONE


class FetchSessionCache:
    """Sessions by id, least recently used evicted first when all slots are taken."""

    def __init__(self, max_slots: int = DEFAULT_CACHE_SLOTS, rng: random.Random | None = None) -> None:
        self.max_slots = max_slots
        self._sessions: OrderedDict[int, FetchSession] = OrderedDict()
        self._rng = rng or random.Random()

    def __len__(self) -> int:
        return len(self._sessions)

    def _new_id(self) -> int:
        while True:
            sid = self._rng.randint(1, 2**31 - 1)
            if sid not in self._sessions:
                return sid

    def new_context(self, session_id: int, epoch: int, requested: Iterable[CachedPartition],
                    forgotten: Iterable[tuple[object, int]], is_follower: bool = False,
                    uses_topic_ids: bool = False) -> FetchContext:
        """Resolve a fetch request's session fields into a FetchContext (Kafka's FetchManager.newContext)."""
        requested = list(requested)
        if epoch == FINAL_EPOCH:
            if session_id != INVALID_SESSION_ID:
                self._sessions.pop(session_id, None)
            return FetchContext(partitions=requested)
        if epoch == INITIAL_EPOCH:
            if session_id != INVALID_SESSION_ID:
                self._sessions.pop(session_id, None)
            session = self._create(requested, uses_topic_ids)
            return FetchContext(partitions=requested, session=session,
                                response_session_id=session.session_id if session else INVALID_SESSION_ID)
        session = self._sessions.get(session_id)
        if session is None:
            return FetchContext(partitions=[], error=ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return FetchContext(partitions=[], error=ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != uses_topic_ids:
            return FetchContext(partitions=[], error=ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        for key in forgotten:
            session.partitions.pop(key, None)
        for p in requested:
            key = p.key(uses_topic_ids)
            cached = session.partitions.get(key)
            if cached is None:
                session.partitions[key] = p
            else:
                cached.update_request(p.fetch_offset, p.max_bytes, p.log_start_offset, p.current_leader_epoch,
                                      p.last_fetched_epoch)
        session.epoch = _next_epoch(epoch)
        self._sessions.move_to_end(session_id)
        return FetchContext(partitions=list(session.partitions.values()), session=session,
                            response_session_id=session_id, incremental=True)

    def _create(self, partitions: list[CachedPartition], uses_topic_ids: bool) -> FetchSession | None:
        if self.max_slots <= 0:
            return None
        if len(self._sessions) >= self.max_slots:
            self._sessions.popitem(last=False)
        session = FetchSession(self._new_id(), _next_epoch(INITIAL_EPOCH), uses_topic_ids=uses_topic_ids)
        for p in partitions:
            session.partitions[p.key(uses_topic_ids)] = p
        self._sessions[session.session_id] = session
        return session

    def remove_topic(self, topic: str) -> None:
        """Drop a deleted topic's partitions from every session."""
        for session in self._sessions.values():
            for key in [k for k, cp in session.partitions.items() if cp.topic == topic]:
                del session.partitions[key]


def _next_epoch(epoch: int) -> int:
    """Epochs wrap from 2**31-1 to 1 (0 and -1 are reserved), as in Kafka."""
    return 1 if epoch >= 2**31 - 1 else epoch + 1
