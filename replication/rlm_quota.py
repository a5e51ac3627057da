"""Kafka's RLMQuotaManager: byte-rate bounds on remote storage copies and reads, and their throttle-time metrics.

One manager per direction, each measuring bytes over sampled windows (``remote.log.manager.{copy,fetch}.quota.
window.num`` windows of ``….window.size.seconds``) against ``remote.log.manager.{copy,fetch}.max.bytes.per.second``:

* **copy**: before each segment is copied the remote log manager waits while ``throttle_time_ms`` is above 0
  (the time the measured rate needs to fall back to the bound, Kafka's QuotaUtils.throttleTime), then records the
  segment's whole size, as Kafka's RLMCopyTask does; so copying averages the bound over the windows while a single
  segment is never cut;
* **fetch**: remote reads are recorded after they return; while the rate is above the bound a fetch that would
  read remote data answers with no records and no error (the consumer retries), as Kafka's ReplicaManager does.

Each wait is recorded in a ``ThrottleTimeSensor`` (Kafka's RLMQuotaMetrics: the average and maximum over two
30-second samples), served as ``kafka.server:type=RemoteLogManager`` ``remote-copy-throttle-time-avg/-max`` and
``remote-fetch-throttle-time-avg/-max``. Event-loop only.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from replication.sampled_rate import SampledRate

__all__ = ["RLMQuotaManager", "ThrottleTimeSensor"]

UNLIMITED = (1 << 63) - 1


class RLMQuotaManager:
    """One broker's remote copy or fetch byte-rate quota."""

    def __init__(self, bytes_per_second: int, *, samples: int = 11, window_seconds: int = 1,
                 clock: Callable[[], float] = time.time) -> None:
        self.bytes_per_second = bytes_per_second  # dynamic: the broker updates it on a config change
        self._sensor = SampledRate(samples, window_seconds * 1000)
        self._clock = clock
        self.throttled = 0  # fetches answered empty (copies delayed) because the quota was exceeded

    def throttle_time_ms(self) -> int:
        """How long until the measured rate is back at the bound (0: not exceeded): Kafka's
        (rate - bound) / bound * the measured window."""
        if self.bytes_per_second >= UNLIMITED or not self._sensor.windows:
            return 0
        rate, window = self._sensor.rate_and_window(int(self._clock() * 1000))
        if rate <= self.bytes_per_second:
            return 0
        return round((rate - self.bytes_per_second) / self.bytes_per_second * window)

    def is_quota_exceeded(self) -> bool:
        return self.throttle_time_ms() > 0

    def record(self, size: int) -> None:
        if size > 0:
            self._sensor.record(size, int(self._clock() * 1000))


class ThrottleTimeSensor:
    """Throttle times in ms, their average and maximum over the last ``samples`` windows of ``window_ms`` (Kafka's
    Avg and Max with the default MetricConfig: 2 samples of 30 s); NaN when nothing was recorded, as Kafka's."""

    def __init__(self, *, samples: int = 2, window_ms: int = 30_000,
                 clock: Callable[[], float] = time.time) -> None:
        self.samples = samples
        self.window_ms = window_ms
        self._clock = clock
        self._values: list[tuple[int, float]] = []  # (ms recorded, throttle ms)

    def record(self, throttle_ms: float) -> None:
        self._values.append((int(self._clock() * 1000), throttle_ms))
        self._expire()

    def _expire(self) -> list[float]:
        oldest = int(self._clock() * 1000) - self.samples * self.window_ms
        self._values = [(t, v) for t, v in self._values if t > oldest]
        return [v for _, v in self._values]

    def avg(self) -> float:
        values = self._expire()
        return sum(values) / len(values) if values else math.nan

    def max(self) -> float:
        values = self._expire()
        return max(values) if values else math.nan
