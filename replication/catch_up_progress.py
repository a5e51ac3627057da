"""Progress of a follower copying a partition it is not in sync with (a reassignment's new replica, or a
replica back from a long absence): one log line when the copy starts, one every ``interval_s`` with the
offset reached, the percentage, the rate and the time left, and one when the follower has caught up, so a
long copy is never a silent minute (as Kafka's reassignment tooling reports lag per replica)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger("replication.catch_up")

TopicPartition = tuple[str, int]


@dataclass
class _Copy:
    started: float
    start_offset: int
    last_report: float


class CatchUpProgress:
    """Per partition of one fetcher: where the out-of-sync copy stands against the leader's high watermark."""

    def __init__(self, leader_id: int, interval_s: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.leader_id = leader_id
        self.interval_s = interval_s
        self._clock = clock
        self._copies: dict[TopicPartition, _Copy] = {}

    def observe(self, tp: TopicPartition, in_sync: bool, log_end_offset: int, leader_high_watermark: int) -> None:
        """After a fetch: ``log_end_offset`` is this replica's, ``leader_high_watermark`` the leader's."""
        now = self._clock()
        copy = self._copies.get(tp)
        behind = leader_high_watermark - log_end_offset
        if copy is None:
            if in_sync or behind <= 0:
                return
            self._copies[tp] = _Copy(now, log_end_offset, now)
            log.info("%s-%d: copying from leader %d: at offset %d of %d (%d records behind)", tp[0], tp[1],
                     self.leader_id, log_end_offset, leader_high_watermark, behind)
            return
        if in_sync or behind <= 0:
            del self._copies[tp]
            log.info("%s-%d: caught up with leader %d at offset %d in %.1f s", tp[0], tp[1], self.leader_id,
                     log_end_offset, now - copy.started)
            return
        if now - copy.last_report < self.interval_s:
            return
        copy.last_report = now
        done = log_end_offset - copy.start_offset
        rate = done / (now - copy.started) if now > copy.started else 0.0
        left = f"about {behind / rate:.0f} s left" if rate > 0 else "no progress yet"
        percent = 100.0 * log_end_offset / leader_high_watermark if leader_high_watermark else 100.0
        log.info("%s-%d: copying from leader %d: at offset %d of %d (%.1f%%), %.0f records/s, %s", tp[0], tp[1],
                 self.leader_id, log_end_offset, leader_high_watermark, percent, rate, left)

    def forget(self, tp: TopicPartition) -> None:
        """The fetcher stopped following ``tp``."""
        self._copies.pop(tp, None)
