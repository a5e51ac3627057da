"""Progress lines while a coordinator partition is loaded by replaying its log: never a silent minute.

Loading replays every record of a coordinator partition (__consumer_offsets, ...) before it serves anything; a
large one takes a while. ``with_progress`` passes the entries through unchanged and, at most every
PROGRESS_INTERVAL_S, logs how far the replay is: records so far, the offset reached and (when the log
end offset is known) the share of offsets done, and the time spent. The runtime's own line at the end
("loaded from N records") closes it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from typing import Any

__all__ = ["with_progress", "PROGRESS_INTERVAL_S"]

log = logging.getLogger("pykbroker.coordinator.runtime")

# The longest a load goes without a progress line.
PROGRESS_INTERVAL_S = 10.0
# The clock is read once per this many records (reading it per record would cost the replay).
CHECK_EVERY = 1000


class _Progress:
    def __init__(self, what: str, end_offset: int | None, clock: Callable[[], float]) -> None:
        self.what = what
        self.end_offset = end_offset
        self.clock = clock
        self.started = self.last = clock()
        self.count = 0

    def step(self, entry: Any) -> None:
        self.count += 1
        if self.count % CHECK_EVERY:
            return
        now = self.clock()
        if now - self.last < PROGRESS_INTERVAL_S:
            return
        self.last = now
        offset = entry[0]
        share = (f", {min(offset * 100 // self.end_offset, 99)}% of the log to offset {self.end_offset}"
                 if self.end_offset else "")
        log.info("Loading %s: %d records replayed so far, at offset %d%s, in %.0f s", self.what, self.count, offset,
                 share, now - self.started)


def with_progress(entries: Iterable[Any] | AsyncIterable[Any], what: str, end_offset: int | None = None,
                  clock: Callable[[], float] = time.monotonic) -> Iterable[Any] | AsyncIterable[Any]:
    """``entries`` (offset first in each), reporting the replay's progress as it is consumed."""
    progress = _Progress(what, end_offset, clock)
    if hasattr(entries, "__aiter__"):
        async def agen(source: AsyncIterable[Any]) -> AsyncIterator[Any]:
            async for entry in source:
                progress.step(entry)
                yield entry
        return agen(entries)  # type: ignore[arg-type]

    def gen(source: Iterable[Any]) -> Iterator[Any]:
        for entry in source:
            progress.step(entry)
            yield entry
    return gen(entries)
