"""The transaction coordinator's markers to other brokers, batched per broker as Kafka's
TransactionMarkerChannelManager batches them.

Each broker has one queue: while a WriteTxnMarkers to it is out, the markers of other transactions wait, and
the next request carries every one of them. Sent one request per transaction over the one connection, a
coordinator completing many transactions at once queued each behind the others' acks=all waits: on 3 busy
brokers a transaction's markers took 6-13 s on average, and its producer's next EndTxn came while the previous
one was still completing (PRODUCER_FENCED, as on Kafka in that window, which there lasts milliseconds).

A request carries one marker per producer id (the answer names markers by producer id): a second marker of
the same producer waits for the next request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wire.messages.write_txn_markers_request import WritableTxnMarker
    from wire.messages.write_txn_markers_response import WritableTxnMarkerResult

__all__ = ["SendMarkers", "TxnMarkerChannel"]

# Sends one WriteTxnMarkers to a broker: (node id, markers) -> the answer's marker results.
SendMarkers = Callable[[int, list["WritableTxnMarker"]], Awaitable[list["WritableTxnMarkerResult"]]]
_Pending = tuple["WritableTxnMarker", "asyncio.Future[WritableTxnMarkerResult]"]


class TxnMarkerChannel:
    """Per-broker queues of markers; ``write`` returns the marker's result once its request is answered."""

    def __init__(self, send: SendMarkers,
                 spawn: Callable[[Coroutine[Any, Any, None]], asyncio.Task[None]] | None = None) -> None:
        """``spawn``: starts a broker's background task (a queue's sender), ``asyncio.create_task`` by default."""
        self._send = send
        self._spawn = spawn or asyncio.create_task
        self._queues: dict[int, list[_Pending]] = {}
        self._senders: dict[int, asyncio.Task[None]] = {}

    async def write(self, node_id: int, marker: WritableTxnMarker) -> WritableTxnMarkerResult:
        """Queue ``marker`` for broker ``node_id``; its result (an exception if the request failed)."""
        future: asyncio.Future[WritableTxnMarkerResult] = asyncio.get_running_loop().create_future()
        self._queues.setdefault(node_id, []).append((marker, future))
        if node_id not in self._senders:
            self._senders[node_id] = self._spawn(self._drain(node_id))
        return await future

    async def _drain(self, node_id: int) -> None:
        batch: list[_Pending] = []
        try:
            while self._queues.get(node_id):
                batch = self._next_batch(node_id)
                if not batch:
                    continue
                try:
                    results = await self._send(node_id, [marker for marker, _ in batch])
                except Exception as exc:  # noqa: BLE001 - each caller retries its own markers
                    _fail(batch, exc)
                    continue
                by_producer = {r.producer_id: r for r in results}
                for marker, future in batch:
                    result = by_producer.get(marker.producer_id)
                    if future.done():
                        continue
                    if result is None:
                        future.set_exception(RuntimeError(f"broker {node_id} answered no marker of producer id "
                                                          f"{marker.producer_id}"))
                    else:
                        future.set_result(result)
        except BaseException:  # cancelled (the broker stops): nobody is left waiting
            _fail(batch + self._queues.pop(node_id, []), RuntimeError("the transaction marker channel stopped"))
            raise
        finally:
            self._senders.pop(node_id, None)

    def _next_batch(self, node_id: int) -> list[_Pending]:
        """Take the queued markers of distinct producer ids (the rest stay queued, in order)."""
        queue = self._queues[node_id]
        batch: list[_Pending] = []
        rest: list[_Pending] = []
        producers: set[int] = set()
        for pending in queue:
            if pending[1].done():
                continue  # its caller was cancelled
            if pending[0].producer_id in producers:
                rest.append(pending)
            else:
                producers.add(pending[0].producer_id)
                batch.append(pending)
        if rest:
            self._queues[node_id] = rest
        else:
            del self._queues[node_id]
        return batch


def _fail(pending: list[_Pending], exc: Exception) -> None:
    for _, future in pending:
        if not future.done():
            future.set_exception(exc)
