"""The coordinator runtime: one single-writer task per loaded partition of a coordinator's internal topic.

Kafka's CoordinatorRuntime in miniature, shared by the group (__consumer_offsets), transaction
(__transaction_state) and share (__share_group_state) coordinators. Each loaded partition has a shard
(the coordinator's state for that partition) and a queue drained by its own asyncio task, so shard
state needs no locks. A write operation — a request or a due timeout — runs on that task:

    result = operation(shard)                # reads the state, returns records + response
    await log.write(encoded records)         # one batch, written by the leader (not replicated yet)
    shard.replay(offset, record) ...         # the state changes (unless result.replay is False)
    ... the next operation runs at once: it sees this one's effect
    ... once the high watermark passes the batch, in write order:
    result.on_appended(None)                 # e.g. answer parked SyncGroups
    -> response

The writes are pipelined as Kafka's CoordinatorRuntime's: an operation's records are applied and written at
once and its response is held until they are committed (acks=all), so one replication round trip commits
every operation written meanwhile, instead of each waiting for its own before the next may run. An
operation that writes nothing is answered at once, or with the writes before it when they are not committed
yet (it may have seen their state), as Kafka's. Reads (``read``) run without queuing on the latest state and
are answered once what they saw is committed, so no reader learns of a write that may still be lost. Kafka
reads its last committed snapshot instead, at once; without snapshots this answers at most a round trip later,
with what was committed by then (a client cannot tell the two apart: either answer is committed state).

A leader's write that fails leaves no record and changes nothing record-backed (the error goes to the
caller, mapped by ``map_append_error`` as Kafka maps append errors for that coordinator). A commit that
fails (timed out, leadership or the ISR lost) fails that operation and every later one still held, and the
shard is reloaded from the log before the next operation runs: the log holds exactly what the leader wrote,
which is what Kafka's coordinator keeps (or reverts to, for a write that never reached the log).

Records are the truth: a shard is loaded (this node was elected leader of the partition) by
replaying its whole log (``CoordinatorLog.read_all``) on its task before it serves anything;
operations for a loading shard wait for the load to finish. Unloading (resignation) stops the task,
fails the operation in flight, the responses held and what is queued with NOT_COORDINATOR and tells the
shard (``on_unloaded``).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from coordinator.runtime.clock import Clock
from coordinator.runtime.errors import (
    ApiError,
    CoordinatorLogError,
    NotCoordinatorError,
    UnknownRecordTypeError,
    append_error_to_response_error,
)
from coordinator.runtime.load_progress import with_progress
from coordinator.runtime.log import CoordinatorLog, CoordinatorLogFactory, LogEntry
from coordinator.runtime.result import CoordinatorResult
from coordinator.runtime.timer import CoordinatorTimer
from wire import DecodeError, ErrorCode

__all__ = ["CoordinatorRuntime", "Shard"]

log = logging.getLogger("pykbroker.coordinator.runtime")

T = TypeVar("T")
ShardT = TypeVar("ShardT", bound="Shard")


class Shard(Protocol):
    """One partition's coordinator state. ``replay`` is the only way record-backed state changes.

    Shards of topics with transactional data (__consumer_offsets) also take the producer id of a
    record (``replay(offset, record, producer_id=pid)``) and transaction markers
    (``replay_end_transaction``).
    """

    def replay(self, offset: int, record: Any) -> None: ...

    def on_loaded(self) -> None: ...

    def on_unloaded(self) -> None: ...


Operation = Callable[[ShardT], "CoordinatorResult[Any] | None"]


@dataclass
class _Write(Generic[ShardT]):
    operation: Operation[ShardT]
    future: asyncio.Future[Any] | None


@dataclass
class _AsyncWrite(Generic[ShardT]):
    operation: Callable[[_ShardContext[ShardT]], Awaitable[Any]]
    future: asyncio.Future[Any]


@dataclass
class _Timeout:
    key: str
    token: int


@dataclass
class _Marker:
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool
    future: asyncio.Future[Any]
    transaction_version: int = 0


class _Reload:
    """Wakes the shard task to reload the shard (a commit failed)."""


_Item = _Write[Any] | _AsyncWrite[Any] | _Marker | _Timeout | _Reload


@dataclass
class _Held:
    """An operation's answer, held until its records are committed (Kafka's deferred event).

    ``wait_committed``: awaits the commit of its own records; None when it wrote none (it waits for the
    writes before it) or they are committed already. ``done``: made for readers waiting on this entry;
    True once committed, False once failed."""

    wait_committed: Callable[[], Awaitable[None]] | None
    future: asyncio.Future[Any] | None
    response: Any
    on_appended: Callable[[BaseException | None], None] | None
    done: asyncio.Future[bool] | None = None


class _ShardContext(Generic[ShardT]):
    def __init__(self, partition: int, log_: CoordinatorLog, clock: Clock,
                 shard_factory: Callable[[int, CoordinatorTimer], ShardT]) -> None:
        self.partition = partition
        self.log = log_
        self.queue: asyncio.Queue[_Item] = asyncio.Queue()
        self.timer = CoordinatorTimer(clock, lambda key, token: self.queue.put_nowait(_Timeout(key, token)))
        self.shard: ShardT = shard_factory(partition, self.timer)
        self.loaded = asyncio.Event()
        self.failed: BaseException | None = None
        self.busy = False
        self.task: asyncio.Task[None] | None = None
        # Answers of written operations, in write order, until the high watermark passes their records.
        self.held: deque[_Held] = deque()
        self.committer: asyncio.Task[None] | None = None
        # A commit failed: the shard is reloaded from the log before the next operation (the error given).
        self.reload: ApiError | None = None


class CoordinatorRuntime(Generic[ShardT]):
    def __init__(self, shard_factory: Callable[[int, CoordinatorTimer], ShardT], log_factory: CoordinatorLogFactory,
                 clock: Clock, *, decode_record: Callable[[bytes, bytes | None], Any], topic: str,
                 map_append_error: Callable[[int], int] = append_error_to_response_error) -> None:
        """``decode_record`` and ``topic``: the record format and name of the coordinator's topic;
        ``map_append_error``: the error a client gets for a failed append's error code."""
        self._decode_record = decode_record
        self.topic = topic
        self._map_append_error = map_append_error
        self._shard_factory = shard_factory
        self._log_factory = log_factory
        self._clock = clock
        self._contexts: dict[int, _ShardContext[ShardT]] = {}
        self._closed = False

    # -- lifecycle --------------------------------------------------------------------------------------
    def is_loaded(self, partition: int) -> bool:
        ctx = self._contexts.get(partition)
        return ctx is not None and ctx.loaded.is_set() and ctx.failed is None

    def is_loading_or_loaded(self, partition: int) -> bool:
        ctx = self._contexts.get(partition)
        return ctx is not None and ctx.failed is None

    def load_if_hosted(self, partition: int, hosted: Callable[[int], bool]) -> None:
        """Load ``partition`` once this broker hosts it as leader (``hosted``). The image may name this broker its
        leader before the replica manager leads it (its log still being created in the background, as just after the
        topic's creation; the image not applied yet): the election loads it then, as Kafka's coordinators load only
        on their broker's election. Loading it before failed ("not hosted here") and was retried on every request."""
        if hosted(partition):
            self.load(partition)

    def load(self, partition: int) -> None:
        """Start loading ``partition`` (this node became its leader); no-op if already loaded or loading.
        A load that failed is started again."""
        if self._closed:
            raise NotCoordinatorError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        existing = self._contexts.get(partition)
        if existing is not None and existing.failed is None:
            return
        ctx = _ShardContext(partition, self._log_factory(partition), self._clock, self._shard_factory)
        self._contexts[partition] = ctx
        ctx.task = asyncio.get_running_loop().create_task(self._run(ctx), name=f"coordinator-{self.topic}-{partition}")

    def unload(self, partition: int) -> Awaitable[None]:
        """Stop serving ``partition`` (this node is no longer its leader) at once; await the result for the
        shard to have stopped."""
        ctx = self._contexts.pop(partition, None)
        if ctx is None:
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            done.set_result(None)
            return done
        return asyncio.ensure_future(self._stop(ctx))

    async def close(self) -> None:
        self._closed = True
        for partition in list(self._contexts):
            await self.unload(partition)

    async def _stop(self, ctx: _ShardContext[ShardT]) -> None:
        for task in (ctx.task, ctx.committer):
            if task is not None:
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass
        ctx.committer = None
        while ctx.held:  # as Kafka's unload: the held answers fail (the shard answers its parked requests)
            self._complete(ctx.held.popleft(), None, NotCoordinatorError(ErrorCode.NOT_COORDINATOR),
                           call_on_appended=False)
        if ctx.failed is None and (ctx.loaded.is_set() or ctx.reload is not None):
            try:
                ctx.shard.on_unloaded()
            except Exception:
                log.exception("error unloading %s-%d", self.topic, ctx.partition)
        ctx.timer.cancel_all()
        ctx.loaded.set()  # readers waiting for a reload find the partition gone
        while not ctx.queue.empty():
            item = ctx.queue.get_nowait()
            if not isinstance(item, (_Timeout, _Reload)):
                _fail(item.future, NotCoordinatorError(ErrorCode.NOT_COORDINATOR))

    async def _load(self, ctx: _ShardContext[ShardT]) -> None:
        entries: Any = ctx.log.read_all()
        count = 0
        if inspect.isawaitable(entries):
            entries = await entries
        entries = with_progress(entries, f"{self.topic}-{ctx.partition}", getattr(ctx.log, "log_end_offset", None))
        if hasattr(entries, "__aiter__"):
            async for entry in entries:
                self._replay_entry(ctx, entry)
                count += 1
        else:
            for entry in entries:
                self._replay_entry(ctx, entry)
                count += 1
        ctx.shard.on_loaded()
        log.log(logging.INFO if count else logging.DEBUG, "%s-%d loaded from %d records",
                self.topic, ctx.partition, count)

    def _replay_entry(self, ctx: _ShardContext[ShardT], entry: LogEntry) -> None:
        offset, key, value = entry[0], entry[1], entry[2]
        producer_id = entry[3] if len(entry) > 3 else -1
        if len(entry) > 4:  # a transaction marker
            _replay_end_transaction(ctx.shard, offset, producer_id, entry[4])
            return
        try:
            record = self._decode_record(key, value)
        except UnknownRecordTypeError as exc:
            log.warning("%s-%d offset %d: %s; skipped", self.topic, ctx.partition, offset, exc)
            return
        except DecodeError as exc:
            log.error("%s-%d offset %d: undecodable record skipped: %s", self.topic, ctx.partition, offset, exc)
            return
        try:
            _replay(ctx.shard, offset, record, producer_id)
        except Exception:
            # One inconsistent record must not make the whole partition unusable.
            log.exception("%s-%d offset %d: replaying %s failed; skipped", self.topic, ctx.partition, offset,
                          type(getattr(record, "key", record)).__name__)

    # -- the shard task ---------------------------------------------------------------------------------
    async def _run(self, ctx: _ShardContext[ShardT]) -> None:
        if not await self._load_or_fail(ctx):
            return
        while True:
            item = await ctx.queue.get()
            ctx.busy = True
            try:
                if ctx.reload is not None and not await self._reload(ctx):
                    if not isinstance(item, (_Timeout, _Reload)):
                        _fail(item.future, NotCoordinatorError(ErrorCode.COORDINATOR_NOT_AVAILABLE))
                    return
                if isinstance(item, _Reload):
                    pass
                elif isinstance(item, _Timeout):
                    timeout = ctx.timer.take(item.key, item.token)
                    if timeout is not None:
                        await self._execute(ctx, lambda _shard: timeout(),  # noqa: B023 - called at once
                                            None, f"timeout {item.key}")
                elif isinstance(item, _Marker):
                    await self._write_marker(ctx, item)
                elif isinstance(item, _AsyncWrite):
                    try:
                        item.future.set_result(await item.operation(ctx))
                    except asyncio.CancelledError:
                        raise
                    except Exception as exc:
                        _fail(item.future, exc)
                else:
                    await self._execute(ctx, item.operation, item.future, "write")
            except asyncio.CancelledError:
                if not isinstance(item, (_Timeout, _Reload)):  # unloaded while its append was in flight
                    _fail(item.future, NotCoordinatorError(ErrorCode.NOT_COORDINATOR))
                raise
            finally:
                ctx.busy = False

    async def _load_or_fail(self, ctx: _ShardContext[ShardT]) -> bool:
        """Load the shard; False (the partition unusable here, what is queued failed) if that failed."""
        try:
            await self._load(ctx)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("loading %s-%d failed", self.topic, ctx.partition)
            ctx.failed = exc
            ctx.loaded.set()
            while not ctx.queue.empty():
                item = ctx.queue.get_nowait()
                if not isinstance(item, (_Timeout, _Reload)):
                    _fail(item.future, NotCoordinatorError(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return False
        ctx.loaded.set()
        return True

    async def _reload(self, ctx: _ShardContext[ShardT]) -> bool:
        """A fresh shard replayed from the log, after a commit failed (Kafka reverts to its snapshot)."""
        ctx.reload = None
        try:
            ctx.shard.on_unloaded()
        except Exception:
            log.exception("error unloading %s-%d", self.topic, ctx.partition)
        ctx.timer.cancel_all()
        ctx.shard = self._shard_factory(ctx.partition, ctx.timer)
        return await self._load_or_fail(ctx)

    async def _execute(self, ctx: _ShardContext[ShardT], operation: Operation[ShardT],
                       future: asyncio.Future[Any] | None, what: str) -> None:
        try:
            result = operation(ctx.shard)
        except ApiError as exc:
            _fail(future, exc)
            return
        except Exception as exc:
            log.exception("%s-%d: %s failed", self.topic, ctx.partition, what)
            _fail(future, exc)
            return
        if result is None:
            result = CoordinatorResult()
        if not result.records:  # answered now, or with the writes before it, whose state it may have seen
            if ctx.held:
                self._hold(ctx, _Held(None, future, result.response, result.on_appended))
            else:
                self._answer(future, result.response, result.on_appended)
            return
        encoded = [r.encode() for r in result.records]
        try:
            if result.producer_id >= 0:
                last_offset, wait_committed = await ctx.log.write(encoded, producer_id=result.producer_id,
                                                                  producer_epoch=result.producer_epoch)
            else:
                last_offset, wait_committed = await ctx.log.write(encoded)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            code = exc.error_code if isinstance(exc, CoordinatorLogError) else ErrorCode.UNKNOWN_SERVER_ERROR
            log.warning("%s-%d: append of %d records failed: %s", self.topic, ctx.partition, len(encoded), exc)
            error = ApiError(self._map_append_error(code))
            error.__cause__ = exc
            self._complete(_Held(None, future, None, result.on_appended), exc, error)
            return
        if ctx.reload is not None:  # a commit failed meanwhile: this one goes too, the log replayed instead
            self._complete(_Held(None, future, None, result.on_appended), ctx.reload.__cause__, ctx.reload)
            return
        if result.replay:
            first = last_offset - len(result.records) + 1
            try:
                for i, record in enumerate(result.records):
                    _replay(ctx.shard, first + i, record, result.producer_id)
            except Exception as exc:
                self._replay_failed(ctx, _Held(wait_committed, future, result.response, result.on_appended),
                                    what, exc)
                return
        if wait_committed is None and not ctx.held:  # committed already (one replica), nothing held before it
            self._answer(future, result.response, result.on_appended)
        else:
            self._hold(ctx, _Held(wait_committed, future, result.response, result.on_appended))

    async def _write_marker(self, ctx: _ShardContext[ShardT], marker: _Marker) -> None:
        """A transaction marker, pipelined as a write: applied at once, answered once committed."""
        try:
            offset, wait_committed = await ctx.log.write_marker(marker.producer_id, marker.producer_epoch,
                                                                marker.coordinator_epoch, marker.commit,
                                                                transaction_version=marker.transaction_version)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            _fail(marker.future, exc)
            return
        held = _Held(wait_committed, marker.future, None, None)
        if ctx.reload is not None:
            self._complete(held, ctx.reload.__cause__, ctx.reload)
            return
        try:
            _replay_end_transaction(ctx.shard, offset, marker.producer_id, marker.commit)
        except Exception as exc:
            self._replay_failed(ctx, held, "a transaction marker", exc)
            return
        if wait_committed is None and not ctx.held:
            self._complete(held, None, None)
        else:
            self._hold(ctx, held)

    def _replay_failed(self, ctx: _ShardContext[ShardT], held: _Held, what: str, exc: Exception) -> None:
        """Records written but not replayed: the shard no longer matches its log, which it is reloaded from."""
        log.exception("%s-%d: replaying the records of %s failed", self.topic, ctx.partition, what)
        self._hold(ctx, held)
        self._commit_failed(ctx, exc)

    # -- held answers (Kafka's deferred events) ---------------------------------------------------------
    def _hold(self, ctx: _ShardContext[ShardT], held: _Held) -> None:
        ctx.held.append(held)
        if ctx.committer is None:
            ctx.committer = asyncio.get_running_loop().create_task(
                self._commit(ctx), name=f"coordinator-{self.topic}-{ctx.partition}-commits")

    async def _commit(self, ctx: _ShardContext[ShardT]) -> None:
        """Answer the held operations in write order as their records are committed."""
        me = asyncio.current_task()
        try:
            while ctx.held:
                held = ctx.held[0]
                if held.wait_committed is not None:
                    try:
                        await held.wait_committed()
                    except asyncio.CancelledError:
                        raise
                    except Exception as exc:
                        if ctx.held and ctx.held[0] is held:
                            self._commit_failed(ctx, exc)
                        return
                if not ctx.held or ctx.held[0] is not held:  # failed meanwhile (a replay failed)
                    return
                ctx.held.popleft()
                self._complete(held, None, None)
        finally:
            if ctx.committer is me:
                ctx.committer = None

    def _commit_failed(self, ctx: _ShardContext[ShardT], exc: BaseException) -> None:
        """Fail every held answer and reload the shard from the log before the next operation."""
        code = exc.error_code if isinstance(exc, CoordinatorLogError) else ErrorCode.UNKNOWN_SERVER_ERROR
        log.warning("%s-%d: %d written operations failed (%s); the shard is reloaded from the log",
                    self.topic, ctx.partition, len(ctx.held), exc)
        error = ApiError(self._map_append_error(code))
        error.__cause__ = exc
        if ctx.committer is not None and ctx.committer is not asyncio.current_task():
            ctx.committer.cancel()
        ctx.committer = None
        ctx.reload = error
        ctx.loaded.clear()
        ctx.timer.cancel_all()
        while ctx.held:
            self._complete(ctx.held.popleft(), exc, error)
        ctx.queue.put_nowait(_Reload())

    def _answer(self, future: asyncio.Future[Any] | None, response: Any,
                on_appended: Callable[[BaseException | None], None] | None) -> None:
        """Answer an operation whose records are committed (what ``_complete`` does, without a held entry)."""
        if on_appended is not None:
            try:
                on_appended(None)
            except Exception as callback_error:
                log.exception("%s: completing a write failed", self.topic)
                _fail(future, callback_error)
                return
        if future is not None and not future.done():
            future.set_result(response)

    def _complete(self, held: _Held, exc: BaseException | None, error: BaseException | None, *,
                  call_on_appended: bool = True) -> None:
        """Answer a held operation: its response (``exc`` None) or ``error`` (``exc`` is the log's own)."""
        if call_on_appended and held.on_appended is not None:
            try:
                held.on_appended(exc)
            except Exception as callback_error:
                log.exception("%s: completing a write failed", self.topic)
                if error is None:
                    error = callback_error
        if error is None:
            if held.future is not None and not held.future.done():
                held.future.set_result(held.response)
        else:
            _fail(held.future, error)
        if held.done is not None and not held.done.done():
            held.done.set_result(error is None)

    # -- scheduling -------------------------------------------------------------------------------------
    async def _context(self, partition: int) -> _ShardContext[ShardT]:
        ctx = self._contexts.get(partition)
        if ctx is None:
            raise NotCoordinatorError(ErrorCode.NOT_COORDINATOR)
        if not ctx.loaded.is_set():
            await ctx.loaded.wait()
            if self._contexts.get(partition) is not ctx:
                raise NotCoordinatorError(ErrorCode.NOT_COORDINATOR)
        if ctx.failed is not None:
            raise NotCoordinatorError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return ctx

    async def write(self, partition: int, operation: Operation[ShardT]) -> Any:
        """Run ``operation`` on the shard's task; its response once its records are appended."""
        return await self.submit(partition, operation)

    def submit(self, partition: int, operation: Operation[ShardT]) -> asyncio.Future[Any]:
        """Queue ``operation`` on the shard's task; the future completes once it is applied."""
        return self._enqueue(partition, lambda future: _Write(operation, future))

    async def complete_transaction(self, partition: int, producer_id: int, producer_epoch: int,
                                   coordinator_epoch: int, commit: bool, *, transaction_version: int = 0) -> None:
        """Write a transaction marker to ``partition`` on its shard's task and apply it to the shard; returns
        once it is committed."""
        await self._enqueue(partition, lambda future: _Marker(producer_id, producer_epoch, coordinator_epoch,
                                                              commit, future, transaction_version))

    async def run(self, partition: int, operation: Callable[[_ShardContext[ShardT]], Awaitable[T]]) -> T:
        """Run an async ``operation`` on the shard's task: it may await I/O (its own appends through
        ``ctx.log``, a blocking commit elsewhere) while nothing else runs on the shard."""
        return await self._enqueue(partition, lambda future: _AsyncWrite(operation, future))

    def _enqueue(self, partition: int, item: Callable[[asyncio.Future[Any]], _Item]) -> asyncio.Future[Any]:
        """Put ``item(future)`` on the shard's queue; the future it completes."""
        ctx = self._contexts.get(partition)
        if ctx is None:
            raise NotCoordinatorError(ErrorCode.NOT_COORDINATOR)
        if ctx.failed is not None:
            raise NotCoordinatorError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        future = asyncio.get_running_loop().create_future()
        ctx.queue.put_nowait(item(future))
        return future

    async def read(self, partition: int, reader: Callable[[ShardT], T]) -> T:
        """``reader(shard)`` once the shard is loaded, without queuing behind writes; its value once every
        write it may have seen is committed (read again if one failed and the shard was reloaded)."""
        while True:
            ctx = await self._context(partition)
            value = reader(ctx.shard)
            if not ctx.held:
                return value
            last = ctx.held[-1]
            if last.done is None:
                last.done = asyncio.get_running_loop().create_future()
            if await asyncio.shield(last.done):
                return value

    async def loaded(self, partition: int) -> ShardT:
        """The shard once loaded, at once even while writes are held: for a caller that keeps its own pending
        state for what it has written (the transaction coordinator, as Kafka's TransactionStateManager)."""
        return (await self._context(partition)).shard

    def loaded_partitions(self) -> list[int]:
        return sorted(p for p in self._contexts if self.is_loaded(p))

    def hosted_partitions(self) -> list[int]:
        """The partitions loaded or loading."""
        return sorted(self._contexts)

    def shard(self, partition: int) -> ShardT:
        """The shard of a loaded or loading partition, without waiting (KeyError if there is none)."""
        return self._contexts[partition].shard

    async def settle(self, rounds: int = 10_000) -> None:
        """Wait until every queue is drained and no operation is running (tests)."""
        idle_rounds = 0
        for _ in range(rounds):
            await asyncio.sleep(0)
            if all(c.queue.empty() and not c.busy and not c.held and c.loaded.is_set()
                   for c in self._contexts.values()):
                idle_rounds += 1
                if idle_rounds >= 3:
                    return
            else:
                idle_rounds = 0
        raise TimeoutError("coordinator shards did not settle")


def _replay(shard: Any, offset: int, record: Any, producer_id: int) -> None:
    if producer_id >= 0:
        shard.replay(offset, record, producer_id=producer_id)
    else:
        shard.replay(offset, record)


def _replay_end_transaction(shard: Any, offset: int, producer_id: int, commit: bool) -> None:
    shard.replay_end_transaction(offset, producer_id, commit)


def _fail(future: asyncio.Future[Any] | None, exc: BaseException) -> None:
    if future is not None and not future.done():
        future.set_exception(exc)
