"""Progress lines while a coordinator partition's log is replayed (a fake clock: one second per record read)."""

from __future__ import annotations

import asyncio
import itertools
import logging

from coordinator.runtime import load_progress
from coordinator.runtime.load_progress import with_progress


def fake_clock(step: float):
    counter = itertools.count()
    return lambda: next(counter) * step


def test_a_long_load_says_how_far_it_is(caplog, monkeypatch):
    monkeypatch.setattr(load_progress, "CHECK_EVERY", 10)
    entries = [(offset, b"k", b"v") for offset in range(200)]
    with caplog.at_level(logging.INFO, logger="pykbroker.coordinator.runtime"):
        out = list(with_progress(entries, "__consumer_offsets-3", 400, clock=fake_clock(1.0)))
    assert out == entries  # passed through unchanged
    lines = [r.getMessage() for r in caplog.records]
    # The clock is read every 10 records, a second apart: a line every 10 s of replay.
    assert len(lines) == 2, lines
    assert lines[0] == ("Loading __consumer_offsets-3: 100 records replayed so far, at offset 99, 24% of the log "
                        "to offset 400, in 10 s")
    assert lines[1].startswith("Loading __consumer_offsets-3: 200 records replayed so far, at offset 199, 49%")


def test_a_quick_load_is_silent_and_async_sources_are_reported_too(caplog):
    async def source():
        for offset in range(50):
            yield (offset, b"k", b"v")

    async def consume():
        return [e async for e in with_progress(source(), "__consumer_offsets-0", None)]

    with caplog.at_level(logging.INFO, logger="pykbroker.coordinator.runtime"):
        assert len(asyncio.run(consume())) == 50
    assert caplog.records == []
