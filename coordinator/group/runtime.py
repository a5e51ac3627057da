"""The coordinator runtime: one single-writer task per loaded __consumer_offsets partition.

Kafka's CoordinatorRuntime in miniature. Each shard has a queue drained by its own asyncio task, so
shard state needs no locks. A write operation — a request or a due timeout — runs on that task:

    result = operation(shard)            # reads the state, returns records + response
    await log.append(encoded records)    # one batch; the next operation waits for it
    shard.replay(offset, record) ...     # the state changes (unless result.replay is False)
    result.on_appended(None)             # e.g. answer parked SyncGroups
    -> response

Because the task awaits each append before taking the next operation, state and log never diverge:
an operation sees the effect of every earlier one, and a failed append changes nothing that is
record-backed (the error goes to the caller, mapped as Kafka maps append errors). Reads run without
queuing; they see the state as of the last completed write.

A shard is loaded by replaying its whole log (``CoordinatorLog.read_all``) before it serves anything;
operations for a loading shard wait for the load to finish.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from coordinator.group import records as rec
from coordinator.group.clock import Clock
from coordinator.group.errors import (
    ApiError,
    CoordinatorLogError,
    NotCoordinatorError,
    append_error_to_response_error,
)
from coordinator.group.load_progress import with_progress
from coordinator.group.log import CoordinatorLog, CoordinatorLogFactory
from coordinator.group.result import CoordinatorResult
from coordinator.group.timer import CoordinatorTimer
from wire import DecodeError, ErrorCode

__all__ = ["CoordinatorRuntime", "Shard"]

log = logging.getLogger("pykbroker.coordinator.runtime")

T = TypeVar("T")


class Shard(Protocol):
    def replay(self, offset: int, record: rec.CoordinatorRecord) -> None: ...

    def on_loaded(self) -> None: ...

    def on_unloaded(self) -> None: ...


ShardFactory = Callable[[int, CoordinatorTimer], Any]


@dataclass
class _Write:
    operation: Callable[[Any], CoordinatorResult]
    future: asyncio.Future | None


@dataclass
class _AsyncWrite:
    operation: Callable[[Any], Any]
    future: asyncio.Future


@dataclass
class _Timeout:
    key: str
    token: int


class _ShardContext:
    def __init__(self, partition: int, log_: CoordinatorLog, clock: Clock) -> None:
        self.partition = partition
        self.log = log_
        self.queue: asyncio.Queue = asyncio.Queue()
        self.timer = CoordinatorTimer(clock, lambda key, token: self.queue.put_nowait(_Timeout(key, token)))
        self.shard: Any = None
        self.loaded = asyncio.Event()
        self.failed: BaseException | None = None
        self.busy = False
        self.task: asyncio.Task | None = None


class CoordinatorRuntime:
    def __init__(self, shard_factory: ShardFactory, log_factory: CoordinatorLogFactory, clock: Clock, *,
                 decode_record: Callable[[bytes, bytes | None], Any] = rec.decode_record,
                 topic: str = "__consumer_offsets") -> None:
        """``decode_record`` and ``topic``: the record format and name of the coordinator's topic (the share
        coordinator runs on this runtime over __share_group_state)."""
        self._decode_record = decode_record
        self.topic = topic
        self._shard_factory = shard_factory
        self._log_factory = log_factory
        self._clock = clock
        self._contexts: dict[int, _ShardContext] = {}
        self._closed = False

    # -- lifecycle --------------------------------------------------------------------------------------
    def is_loaded(self, partition: int) -> bool:
        ctx = self._contexts.get(partition)
        return ctx is not None and ctx.loaded.is_set() and ctx.failed is None

    def load(self, partition: int) -> None:
        """Start loading ``partition`` (this node became its leader); no-op if already loaded or loading."""
        if self._closed:
            raise NotCoordinatorError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if partition in self._contexts:
            return
        ctx = _ShardContext(partition, self._log_factory(partition), self._clock)
        ctx.shard = self._shard_factory(partition, ctx.timer)
        self._contexts[partition] = ctx
        ctx.task = asyncio.get_running_loop().create_task(self._run(ctx), name=f"coordinator-{self.topic}-{partition}")

    async def unload(self, partition: int) -> None:
        """Stop serving ``partition`` (this node is no longer its leader)."""
        ctx = self._contexts.pop(partition, None)
        if ctx is None:
            return
        await self._stop(ctx)

    async def close(self) -> None:
        self._closed = True
        for partition in list(self._contexts):
            await self.unload(partition)

    async def _stop(self, ctx: _ShardContext) -> None:
        if ctx.task is not None:
            ctx.task.cancel()
            try:
                await ctx.task
            except asyncio.CancelledError:
                pass
        if ctx.loaded.is_set() and ctx.failed is None:
            try:
                ctx.shard.on_unloaded()
            except Exception:
                log.exception("error unloading %s-%d", self.topic, ctx.partition)
        ctx.timer.cancel_all()
        while not ctx.queue.empty():
            item = ctx.queue.get_nowait()
            if isinstance(item, (_Write, _AsyncWrite)) and item.future is not None and not item.future.done():
                item.future.set_exception(NotCoordinatorError(ErrorCode.NOT_COORDINATOR))

    async def _load(self, ctx: _ShardContext) -> None:
        entries = ctx.log.read_all()
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

    def _replay_entry(self, ctx: _ShardContext, entry) -> None:
        offset, key, value = entry[0], entry[1], entry[2]
        producer_id = entry[3] if len(entry) > 3 else -1
        if len(entry) > 4:  # a transaction marker
            ctx.shard.replay_end_transaction(offset, producer_id, entry[4])
            return
        try:
            record = self._decode_record(key, value)
        except rec.UnknownRecordTypeError as exc:
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
                          type(record.key).__name__)

    # -- the shard task ---------------------------------------------------------------------------------
    async def _run(self, ctx: _ShardContext) -> None:
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
                if isinstance(item, (_Write, _AsyncWrite)):
                    _fail(item.future, NotCoordinatorError(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        ctx.loaded.set()
        while True:
            item = await ctx.queue.get()
            ctx.busy = True
            try:
                if isinstance(item, _Timeout):
                    operation = ctx.timer.take(item.key, item.token)
                    if operation is not None:
                        await self._execute(ctx, lambda _shard, op=operation: op(), None, f"timeout {item.key}")
                elif isinstance(item, _AsyncWrite):
                    try:
                        item.future.set_result(await item.operation(ctx))
                    except asyncio.CancelledError:
                        raise
                    except Exception as exc:
                        _fail(item.future, exc)
                else:
                    await self._execute(ctx, item.operation, item.future, "write")
            finally:
                ctx.busy = False

    async def _execute(self, ctx: _ShardContext, operation, future: asyncio.Future | None, what: str) -> None:
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
        try:
            await self._apply(ctx, result)
        except ApiError as exc:
            _fail(future, exc)
            return
        except Exception as exc:
            log.exception("%s-%d: applying the result of %s failed", self.topic, ctx.partition, what)
            _fail(future, exc)
            return
        if future is not None and not future.done():
            future.set_result(result.response)

    async def _apply(self, ctx: _ShardContext, result: CoordinatorResult) -> None:
        if result.records:
            encoded = [r.encode() for r in result.records]
            try:
                if result.producer_id >= 0:
                    last_offset = await ctx.log.append(encoded, producer_id=result.producer_id,
                                                       producer_epoch=result.producer_epoch)
                else:
                    last_offset = await ctx.log.append(encoded)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                code = exc.error_code if isinstance(exc, CoordinatorLogError) else ErrorCode.UNKNOWN_SERVER_ERROR
                log.warning("%s-%d: append of %d records failed: %s", self.topic, ctx.partition,
                            len(encoded), exc)
                if result.on_appended is not None:
                    result.on_appended(exc)
                raise ApiError(append_error_to_response_error(code)) from exc
            if result.replay:
                first = last_offset - len(result.records) + 1
                for i, record in enumerate(result.records):
                    _replay(ctx.shard, first + i, record, result.producer_id)
        if result.on_appended is not None:
            result.on_appended(None)

    # -- scheduling -------------------------------------------------------------------------------------
    async def _context(self, partition: int) -> _ShardContext:
        ctx = self._contexts.get(partition)
        if ctx is None:
            raise NotCoordinatorError(ErrorCode.NOT_COORDINATOR)
        if not ctx.loaded.is_set():
            await ctx.loaded.wait()
        if ctx.failed is not None:
            raise NotCoordinatorError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return ctx

    async def write(self, partition: int, operation: Callable[[Any], CoordinatorResult]) -> Any:
        """Run ``operation`` on the shard's task; its response once its records are appended."""
        return await self.submit(partition, operation)

    def submit(self, partition: int, operation: Callable[[Any], CoordinatorResult]) -> asyncio.Future:
        """Queue ``operation`` on the shard's task; the future completes once it is applied."""
        return self._enqueue(partition, lambda future: _Write(operation, future))

    async def complete_transaction(self, partition: int, producer_id: int, producer_epoch: int,
                                   coordinator_epoch: int, commit: bool) -> None:
        """Write a transaction marker to ``partition`` on its shard's task, then apply it to the shard."""
        async def write_marker(ctx: _ShardContext) -> None:
            offset = await ctx.log.append_marker(producer_id, producer_epoch, coordinator_epoch, commit)
            ctx.shard.replay_end_transaction(offset, producer_id, commit)
        await self.submit_async(partition, write_marker)

    def submit_async(self, partition: int, operation: Callable[[_ShardContext], Any]) -> asyncio.Future:
        """Queue a coroutine operation that runs on the shard's task with its context (markers)."""
        return self._enqueue(partition, lambda future: _AsyncWrite(operation, future))

    def _enqueue(self, partition: int, item: Callable[[asyncio.Future], Any]) -> asyncio.Future:
        """Put ``item(future)`` on the shard's queue; the future it completes."""
        ctx = self._contexts.get(partition)
        if ctx is None:
            raise NotCoordinatorError(ErrorCode.NOT_COORDINATOR)
        if ctx.failed is not None:
            raise NotCoordinatorError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        future = asyncio.get_running_loop().create_future()
        ctx.queue.put_nowait(item(future))
        return future

    async def read(self, partition: int, reader: Callable[[Any], T]) -> T:
        ctx = await self._context(partition)
        return reader(ctx.shard)

    def loaded_partitions(self) -> list[int]:
        return sorted(p for p in self._contexts if self.is_loaded(p))

    def shard(self, partition: int) -> Any:
        """The shard object (tests and introspection only)."""
        return self._contexts[partition].shard

    async def settle(self, rounds: int = 10_000) -> None:
        """Wait until every queue is drained and no operation is running (tests)."""
        idle_rounds = 0
        for _ in range(rounds):
            await asyncio.sleep(0)
            if all(c.queue.empty() and not c.busy and c.loaded.is_set() for c in self._contexts.values()):
                idle_rounds += 1
                if idle_rounds >= 3:
                    return
            else:
                idle_rounds = 0
        raise TimeoutError("coordinator shards did not settle")


def _replay(shard: Any, offset: int, record: rec.CoordinatorRecord, producer_id: int) -> None:
    if producer_id >= 0:
        shard.replay(offset, record, producer_id=producer_id)
    else:
        shard.replay(offset, record)


def _fail(future: asyncio.Future | None, exc: BaseException) -> None:
    if future is not None and not future.done():
        future.set_exception(exc)
