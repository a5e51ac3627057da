"""How long the broker works on one request, for request quotas (Kafka's request handler thread time).

A handler is a coroutine that may wait (a long-poll fetch, a group join, an acks=all produce); waiting is
not work. ``timed`` runs the handler's coroutine step by step and adds up only the time its steps take,
which is what a Kafka request handler thread would have spent on it. Measuring is switched on only while
some client has a ``request_percentage`` quota, so requests pay nothing for it otherwise.
"""

from __future__ import annotations

import time
from collections.abc import Coroutine, Generator
from typing import Any

from pykbroker.context import RequestContext

__all__ = ["timed", "run_timed", "request_throttle_ms", "apply_request_throttle", "record_response_time"]

_NOTHING: Any = object()


class _TimedCoroutine:
    """Awaitable running ``coro`` and adding the time of each of its steps to ``ctx.request_time_s``."""

    __slots__ = ("coro", "ctx", "first")

    def __init__(self, coro: Coroutine[Any, Any, Any], ctx: RequestContext, first: Any = _NOTHING) -> None:
        self.coro = coro
        self.ctx = ctx
        self.first = first  # what the coroutine yielded from a first step already run (run_timed)

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, ctx = self.coro, self.ctx
        send_value: Any = None
        error: BaseException | None = None
        if self.first is not _NOTHING:
            try:
                send_value = yield self.first
            except BaseException as exc:  # delivered to the coroutine at its await (e.g. cancellation)
                error = exc
        while True:
            ctx.step_started = time.perf_counter()
            try:
                yielded = coro.send(send_value) if error is None else coro.throw(error)
            except StopIteration as done:
                ctx.request_time_s += time.perf_counter() - ctx.step_started
                ctx.step_started = 0.0
                return done.value
            except BaseException:
                ctx.request_time_s += time.perf_counter() - ctx.step_started
                ctx.step_started = 0.0
                raise
            ctx.request_time_s += time.perf_counter() - ctx.step_started
            ctx.step_started = 0.0
            try:
                send_value, error = (yield yielded), None
            except BaseException as exc:  # delivered to the coroutine at its await (e.g. cancellation)
                send_value, error = None, exc


def timed(coro: Coroutine[Any, Any, Any], ctx: RequestContext) -> _TimedCoroutine:
    """``coro`` (a handler's coroutine), awaited with its running time added up in ``ctx``."""
    return _TimedCoroutine(coro, ctx)


def run_timed(coro: Coroutine[Any, Any, Any], ctx: RequestContext, started: float) -> tuple[float, Any]:
    """Run ``coro``'s first step from ``started`` (perf_counter), timed into ``ctx``: (when it finished,
    its result) when it finished there (most handlers never wait: nothing more to pay), else (0.0, an
    awaitable of the rest, timed step by step)."""
    ctx.step_started = started
    try:
        yielded = coro.send(None)
    except StopIteration as done:
        finished = time.perf_counter()
        ctx.request_time_s += finished - started
        ctx.step_started = 0.0
        return finished, done.value
    except BaseException:
        ctx.request_time_s += time.perf_counter() - started
        ctx.step_started = 0.0
        raise
    ctx.request_time_s += time.perf_counter() - started
    ctx.step_started = 0.0
    return 0.0, _TimedCoroutine(coro, ctx, yielded)


def request_throttle_ms(ctx: RequestContext) -> int:
    """Record the request's handling time so far against its client's request quota, once; the throttle.

    Handlers that answer differently when throttled (Fetch answers empty, as Kafka's) call this before
    building their response; for every other request the connection calls it after the handler.
    """
    if ctx.request_throttle is None:
        spent = ctx.request_time_s
        if ctx.step_started:  # called from inside a running step
            spent += time.perf_counter() - ctx.step_started
        broker = ctx.broker
        ctx.request_throttle = broker.request_quota.record_time(ctx.user, ctx.client_id or "", spent, broker.now_ms())
    return ctx.request_throttle


def apply_request_throttle(ctx: RequestContext, response: Any) -> None:
    """After the handler: record its time (unless it did), and give the response and the connection the
    larger of its byte-rate throttle and its request throttle, as Kafka's sendResponseMaybeThrottle."""
    throttle = request_throttle_ms(ctx)
    if throttle > ctx.throttle_ms:
        ctx.throttle_ms = throttle
    if ctx.throttle_ms > getattr(response, "throttle_time_ms", ctx.throttle_ms):
        response.throttle_time_ms = ctx.throttle_ms


def record_response_time(ctx: RequestContext, seconds: float) -> None:
    """Sending the response counts against the client's next requests (Kafka's network thread time)."""
    broker = ctx.broker
    broker.request_quota.record_time_no_throttle(ctx.user, ctx.client_id or "", seconds, broker.now_ms())
