"""Replica fetchers: a follower copies its partitions from their leader with the Fetch API.

One ``ReplicaFetcher`` per leader broker (Kafka's ReplicaFetcherThread, here an asyncio task) fetches
every partition this broker follows from that leader, as Kafka's fetcher does:
- each request names the partition's fetch offset (this log's end), the leader epoch the follower
  knows (the leader fences a stale one), and the epoch of the follower's last batch; a leader whose
  log diverged answers with the end of that epoch, and the follower truncates to it (KIP-595's
  truncation on fetch; the next fetch checks again until the logs agree);
- fetched batches are appended with the leader's offsets and epochs, then the follower takes the
  leader's high watermark and log start offset;
- OFFSET_OUT_OF_RANGE: if the leader's log end is below the follower's, the follower truncates to it;
  if the leader's log start is past the follower's end, the follower starts over there;
- a partition whose leader answers NOT_LEADER_OR_FOLLOWER, a fenced epoch, or an unknown partition waits
  ``replica.fetch.backoff.ms`` for new metadata (a new epoch ends the wait); a leader that does not know the
  follower's epoch yet is asked again after 100 ms; a failed connection backs off the
  whole fetcher.
With a follower replication throttle (``quota``), a partition this broker is not in the ISR of and the
throttle names is left out of fetches while the throttle is spent (Kafka's shouldFollowerThrottle), and
the bytes it brings count against it.
``replication.replica_fetcher_manager.ReplicaFetcherManager`` starts and stops fetchers as partitions change
leaders. Event-loop only.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable

from replication.broker_client import BrokerClient, BrokerConnectionError
from replication.catch_up_progress import CatchUpProgress
from replication.fetch_session import INITIAL_EPOCH
from replication.partition import Partition
from replication.replica_fetcher_manager import FetcherConfig
from replication.replica_manager import ReplicationQuota
from wire import ErrorCode
from wire.messages import FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse
from wire.messages.fetch_request import FetchPartition as FetchRequestPartition
from wire.messages.fetch_request import FetchTopic, ForgottenTopic, ReplicaState
from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic

__all__ = ["ReplicaFetcher"]

log = logging.getLogger("replication.replica_fetcher")

FETCH_VERSION = 17  # as Kafka 4.4's fetcher: topic ids, ReplicaState, diverging epochs, sessions
MAX_EPOCH = 2**31 - 1
# What a fetch says of a partition: fetch offset, log start, leader epoch, last fetched epoch.
Position = tuple[int, int, int, int]
UNFETCHED: Position = (-1, -1, -1, -1)  # a session entry to name again in the next fetch
LIST_OFFSETS_VERSION = 7
EARLIEST, LATEST, EARLIEST_LOCAL, EARLIEST_PENDING_UPLOAD = -2, -1, -4, -6
TopicPartition = tuple[str, int]
# How soon a follower asks again a leader that does not know its epoch yet.
UNKNOWN_EPOCH_RETRY_S = 0.1
THROTTLE_RECHECK_S = 0.1  # how soon a partition left out by a spent throttle is considered again


class ReplicaFetcher:
    """Fetches the partitions this broker follows from broker ``leader_id``."""

    def __init__(self, node_id: int, leader_id: int, client: BrokerClient,
                 partition_lookup: Callable[[str, int], Partition | None], config: FetcherConfig,
                 quota: ReplicationQuota | None = None,
                 remote_aux_state: Callable[[Partition, int], Awaitable[None]] | None = None) -> None:
        self.node_id = node_id
        self.quota = quota
        # Tiered storage: restores the leader epochs and producer state of the data only remote (KIP-405).
        self.remote_aux_state = remote_aux_state
        self.leader_id = leader_id
        self.client = client
        self._partition = partition_lookup
        self.config = config
        self._delayed_until: dict[TopicPartition, float] = {}  # partitions and when they may be fetched again
        self._changed = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._failures = 0  # consecutive failed fetches: only the first is a warning
        # The fetch session (KIP-227): its id (0: none yet), next epoch, and each partition's position as the
        # leader holds it; the request in flight's positions, committed to the session once answered.
        self._session_id = 0
        self._session_epoch = INITIAL_EPOCH
        self._session: dict[TopicPartition, tuple[uuid.UUID, Position]] = {}
        self._pending: tuple[dict[TopicPartition, tuple[uuid.UUID, Position]], bool] = ({}, True)
        self.progress = CatchUpProgress(leader_id)

    @property
    def partitions(self) -> set[TopicPartition]:
        return set(self._delayed_until)

    def add_partitions(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self._delayed_until[tp] = 0.0
        self._changed.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"replica-fetcher-{self.leader_id}")

    def remove_partitions(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self._delayed_until.pop(tp, None)
            self.progress.forget(tp)
        self._changed.set()

    async def close(self) -> None:
        if self._task is not None:
            task, self._task = self._task, None
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():  # our caller is being cancelled: pass it on
                    self.client.close()
                    raise
            except Exception:  # noqa: BLE001
                log.exception("fetcher from broker %d failed while closing", self.leader_id)
        self.client.close()

    # -- the loop ------------------------------------------------------------------------------------
    def _following(self, tp: TopicPartition) -> Partition | None:
        p = self._partition(*tp)
        if p is None or p.leader_id != self.leader_id or p.is_leader:
            return None
        return p

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        backoff_s = self.config.backoff_ms / 1000
        while True:
            now = loop.time()
            ready = {tp: p for tp, until in self._delayed_until.items()
                     if until <= now and (p := self._following(tp)) is not None}
            throttled = [tp for tp, p in ready.items() if self._throttled(p)]
            if throttled and self.quota is not None and self.quota.is_quota_exceeded():
                for tp in throttled:
                    del ready[tp]
                self._delay(throttled, THROTTLE_RECHECK_S)
            if not ready:
                self._changed.clear()
                waits = [until - now for until in self._delayed_until.values() if until > now]
                try:
                    async with asyncio.timeout(min(waits) if waits else None):
                        await self._changed.wait()
                except TimeoutError:
                    pass
                continue
            try:
                await self._fetch_once(ready)
                if self._failures:
                    log.info("fetching from broker %d again after %d failed attempts", self.leader_id, self._failures)
                    self._failures = 0
            except BrokerConnectionError as exc:
                self._reset_session()  # whether the leader saw the request is unknown: start a new session
                self._failures += 1
                log.log(logging.WARNING if self._failures == 1 else logging.DEBUG,
                        "fetch from broker %d failed, retrying every %d ms: %s", self.leader_id,
                        self.config.backoff_ms, exc)
                self._delay(list(ready), backoff_s)
            except asyncio.CancelledError:
                raise
            except Exception:
                self._reset_session()
                log.exception("replica fetcher of broker %d failed; retrying in %d ms", self.leader_id,
                              self.config.backoff_ms)
                self._delay(list(ready), backoff_s)

    def _throttled(self, p: Partition) -> bool:
        return self.quota is not None and self.node_id not in p.isr and self.quota.is_throttled(p.topic, p.partition)

    def _delay(self, partitions: list[TopicPartition], seconds: float) -> None:
        until = asyncio.get_running_loop().time() + seconds
        for tp in partitions:
            if tp in self._delayed_until:
                self._delayed_until[tp] = until

    def _fetch_request(self, ready: dict[TopicPartition, Partition]) -> FetchRequest:
        """The next request of this fetcher's fetch session (KIP-227, as Kafka's FetchSessionHandler): the
        first one full (epoch 0), later ones naming only partitions whose fetch position changed and
        forgetting those no longer fetched; the leader answers only partitions with something new."""
        wanted = {tp: self._position(p) for tp, p in ready.items()}
        full = self._session_id == 0
        ids = {tp: p.topic_id for tp, p in ready.items()}
        changed = wanted if full else {tp: pos for tp, pos in wanted.items() if self._session.get(tp) != (ids[tp], pos)}
        # Forgotten: partitions no longer fetched (delayed ones too, as Kafka's fetcher), and the old topic id of a
        # partition whose topic id changed (named again with its new one, as Kafka's FetchSessionHandler).
        forgotten = [] if full else [(tp, old_id) for tp, (old_id, _) in self._session.items()
                                     if tp not in wanted or ids[tp] != old_id]
        by_topic: dict[uuid.UUID, list[FetchRequestPartition]] = {}
        for (topic, index), (fetch_offset, log_start, leader_epoch, last_fetched_epoch) in changed.items():
            by_topic.setdefault(ready[(topic, index)].topic_id, []).append(FetchRequestPartition(
                partition=index, current_leader_epoch=leader_epoch, fetch_offset=fetch_offset,
                last_fetched_epoch=last_fetched_epoch, log_start_offset=log_start,
                partition_max_bytes=self.config.partition_max_bytes))
        forgotten_by_topic: dict[uuid.UUID, list[int]] = {}
        for (_, index), topic_id in forgotten:
            forgotten_by_topic.setdefault(topic_id, []).append(index)
        self._pending = ({tp: (ids[tp], pos) for tp, pos in wanted.items()}, full)
        return FetchRequest(replica_state=ReplicaState(replica_id=self.node_id, replica_epoch=-1),
                            max_wait_ms=self.config.max_wait_ms, min_bytes=self.config.min_bytes,
                            max_bytes=self.config.response_max_bytes, isolation_level=0,
                            session_id=self._session_id, session_epoch=self._session_epoch,
                            topics=[FetchTopic(topic_id=t, partitions=ps) for t, ps in by_topic.items()],
                            forgotten_topics_data=[ForgottenTopic(topic_id=t, partitions=ps)
                                                   for t, ps in forgotten_by_topic.items()])

    @staticmethod
    def _position(p: Partition) -> tuple[int, int, int, int]:
        """What a fetch says of a partition: fetch offset, log start, leader epoch, last fetched epoch."""
        latest = p.log.latest_epoch
        return (p.log.log_end_offset, p.log.log_start_offset, p.leader_epoch, latest if latest is not None else -1)

    def _reset_session(self) -> None:
        self._session_id, self._session_epoch, self._session = 0, INITIAL_EPOCH, {}

    async def _fetch_once(self, ready: dict[TopicPartition, Partition]) -> None:
        response = await self.client.request(self._fetch_request(ready), FETCH_VERSION, FetchResponse)
        backoff_s = self.config.backoff_ms / 1000
        if response.error_code in (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH):
            log.info("fetch session %d with broker %d: %s; starting a new one", self._session_id, self.leader_id,
                     ErrorCode(response.error_code).name)
            self._reset_session()
            return
        if response.error_code != ErrorCode.NONE:
            log.warning("broker %d refused a replica fetch: %s", self.leader_id, ErrorCode(response.error_code).name)
            self._reset_session()
            self._delay(list(ready), backoff_s)
            return
        wanted, _full = self._pending
        if response.session_id:
            if response.session_id != self._session_id:
                self._session_id, self._session_epoch = response.session_id, INITIAL_EPOCH
            self._session = dict(wanted)
            self._session_epoch = self._session_epoch + 1 if self._session_epoch < MAX_EPOCH else 1
        else:
            self._reset_session()  # the leader keeps no session for us (its cache is full): full fetches
        names = {p.topic_id: t for (t, _), p in ready.items()}
        for t in response.responses:
            topic = names.get(t.topic_id)
            if topic is None:
                continue
            for data in t.partitions:
                tp = (topic, data.partition_index)
                p = ready.get(tp)
                if p is None or self._following(tp) is not p or tp not in self._delayed_until:
                    continue  # no longer followed from this leader: the answer is stale
                await self._process(tp, p, data, backoff_s)

    async def _process(self, tp: TopicPartition, p: Partition, data, backoff_s: float) -> None:
        code = data.error_code
        if code == ErrorCode.NONE:
            diverging = data.diverging_epoch
            if diverging is not None and diverging.epoch >= 0:
                self._truncate_to_diverging_epoch(tp, p, diverging.epoch, diverging.end_offset)
                return
            if data.records is not None and len(data.records):
                if self._throttled(p):
                    self.quota.record(len(data.records))  # type: ignore[union-attr]
                p.append_records_as_follower(data.records, data.high_watermark)
            else:
                p.update_follower_high_watermark(data.high_watermark)
            if data.log_start_offset > p.log.log_start_offset:
                p.log.maybe_increment_log_start_offset(min(data.log_start_offset, p.log.high_watermark),
                                                       "leader offset increment")
            self.progress.observe(tp, self.node_id in p.isr, p.log.log_end_offset, data.high_watermark)
            return
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            await self._handle_out_of_range(tp, p)
            return
        if code == ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE:
            await self._handle_moved_to_tiered_storage(tp, p)
            return
        if code == ErrorCode.UNKNOWN_LEADER_EPOCH:
            # The leader has yet to learn the epoch this follower already knows (ZooKeeper's watches reach brokers
            # one by one): nothing will tell the follower when it has, so it asks again soon rather than after
            # replica.fetch.backoff.ms, which held the high watermark, and every acks=all write, up to a second
            # after each leader change (issue 33).
            backoff_s = min(backoff_s, UNKNOWN_EPOCH_RETRY_S)
        log.info("%s-%d: leader %d answered %s; waiting %d ms for new metadata", tp[0], tp[1], self.leader_id,
                 ErrorCode(code).name, backoff_s * 1000)
        # Forgotten while it waits, named again after, whatever its position (as Kafka's fetcher, which leaves a
        # delayed partition out of its session): the leader then fetches it afresh.
        if tp in self._session:
            self._session[tp] = (self._session[tp][0], UNFETCHED)
        self._delay([tp], backoff_s)

    def _truncate_to_diverging_epoch(self, tp: TopicPartition, p: Partition, epoch: int, end_offset: int) -> None:
        """The leader's ``epoch`` ended at ``end_offset``: keep no more of it than the leader has."""
        own_epoch, own_end = p.log.end_offset_for_epoch(epoch)
        target = min(end_offset, own_end) if own_epoch == epoch and own_end >= 0 else end_offset
        target = min(target, p.log.log_end_offset)
        log.info("%s-%d: log diverged from leader %d (its epoch %d ends at %d); truncating from %d to %d",
                 tp[0], tp[1], self.leader_id, epoch, end_offset, p.log.log_end_offset, target)
        p.log.truncate_to(max(target, 0))

    async def _handle_out_of_range(self, tp: TopicPartition, p: Partition) -> None:
        leader_end = await self._leader_offset(tp, p, LATEST)
        own_end = p.log.log_end_offset
        if leader_end is None:
            self._delay([tp], self.config.backoff_ms / 1000)
        elif leader_end < own_end:
            log.warning("%s-%d: truncating from %d to the leader's log end %d (out of range)", tp[0], tp[1],
                        own_end, leader_end)
            p.log.truncate_to(leader_end)
        else:
            leader_start = await self._leader_offset(tp, p, EARLIEST)
            if leader_start is not None and leader_start > own_end:
                log.warning("%s-%d: the leader's log starts at %d, past this log's end %d: starting over there",
                            tp[0], tp[1], leader_start, own_end)
                p.log.truncate_fully_and_start_at(leader_start)

    def _fetch_from_last_tiered_offset(self, p: Partition) -> bool:
        """Kafka's ReplicaFetcherThread.shouldFetchFromLastTieredOffset: follower.fetch.last.tiered.offset.enable,
        a tiered topic that is not compacted, and a replica with nothing yet."""
        log_ = p.log
        return self.config.fetch_last_tiered_offset and log_.remote_log_enabled and not log_.config.compact \
            and log_.log_end_offset == 0

    async def _tiered_start_offset(self, tp: TopicPartition, p: Partition, leader_start: int) -> int | None:
        """Where a replica whose fetch offset is only remote starts: the leader's local log start offset, or with
        KIP-1023 the leader's earliest offset pending upload (its last tiered offset + 1: what is copied already
        is not fetched again); None when the leader cannot say yet."""
        if not self._fetch_from_last_tiered_offset(p):
            return await self._leader_offset(tp, p, EARLIEST_LOCAL, version=8)
        pending = await self._leader_offset(tp, p, EARLIEST_PENDING_UPLOAD, version=11)
        if pending is None or pending >= 0:
            return pending
        # Nothing copied yet as the leader knows it: its local log must then start at its log start offset.
        local_start = await self._leader_offset(tp, p, EARLIEST_LOCAL, version=8)
        if local_start == leader_start:
            return local_start
        log.info("%s-%d: segments are in remote storage but leader %d does not know its earliest pending upload "
                 "offset yet; retrying", tp[0], tp[1], self.leader_id)
        return None

    async def _handle_moved_to_tiered_storage(self, tp: TopicPartition, p: Partition) -> None:
        """KIP-405: the offset is only in the leader's remote storage. The follower starts at the leader's local
        log start offset (or, with follower.fetch.last.tiered.offset.enable, after its last tiered offset), with
        its log start offset the leader's (what is below is remote, for both), and takes the leader epochs and
        producer state of what is below from the remote segment ending there, not by fetching it."""
        leader_start = await self._leader_offset(tp, p, EARLIEST)
        local_start = await self._tiered_start_offset(tp, p, leader_start) if leader_start is not None else None
        if local_start is None or leader_start is None:
            self._delay([tp], self.config.backoff_ms / 1000)
            return
        log.info("%s-%d: offsets below %d are in remote storage; this replica starts there (log start offset %d)",
                 tp[0], tp[1], local_start, leader_start)
        p.log.truncate_fully_and_start_at(local_start)
        p.log.set_log_start_offset_from_remote(leader_start)
        if self.remote_aux_state is not None:
            try:
                await self.remote_aux_state(p, local_start)
            except Exception as exc:  # noqa: BLE001 - the store unreachable: the replica goes on without it
                log.warning("%s-%d: leader epochs and producer state of the remote data not restored: %s", tp[0],
                            tp[1], exc)

    async def _leader_offset(self, tp: TopicPartition, p: Partition, timestamp: int,
                             version: int = LIST_OFFSETS_VERSION) -> int | None:
        request = ListOffsetsRequest(replica_id=self.node_id, isolation_level=0, topics=[ListOffsetsTopic(
            name=tp[0], partitions=[ListOffsetsPartition(partition_index=tp[1], current_leader_epoch=p.leader_epoch,
                                                         timestamp=timestamp)])])
        response = await self.client.request(request, max(version, LIST_OFFSETS_VERSION), ListOffsetsResponse)
        answer = response.topics[0].partitions[0]
        if answer.error_code != ErrorCode.NONE:
            log.info("%s-%d: leader %d answered ListOffsets with %s", tp[0], tp[1], self.leader_id,
                     ErrorCode(answer.error_code).name)
            return None
        return answer.offset
