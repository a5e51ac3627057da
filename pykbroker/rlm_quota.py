"""Kafka's RLMQuotaManager: a byte-rate bound on remote storage reads (remote.log.manager.fetch.max.bytes.per.second).

Remote reads are recorded after they return; while the rate over the sampled windows
(``remote.log.manager.fetch.quota.window.num`` windows of ``remote.log.manager.fetch.quota.window.size.seconds``)
is above the bound, a fetch that would read remote data answers with no records and no error (the consumer
retries), as Kafka's ReplicaManager does when its remote fetch quota is exceeded. Event-loop only.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from pykbroker.quotas import _Sensor

__all__ = ["RLMQuotaManager"]

UNLIMITED = (1 << 63) - 1


class RLMQuotaManager:
    """One broker's remote fetch (or copy) byte-rate quota."""

    def __init__(self, bytes_per_second: int, *, samples: int = 11, window_seconds: int = 1,
                 clock: Callable[[], float] = time.time) -> None:
        self.bytes_per_second = bytes_per_second  # dynamic: the broker updates it on a config change
        self._sensor = _Sensor(samples, window_seconds * 1000)
        self._clock = clock
        self.throttled = 0  # fetches answered empty because the quota was exceeded

    def is_quota_exceeded(self) -> bool:
        if self.bytes_per_second >= UNLIMITED or not self._sensor.windows:
            return False
        rate, _window = self._sensor.rate_and_window(int(self._clock() * 1000))
        return rate > self.bytes_per_second

    def record(self, size: int) -> None:
        if size > 0:
            self._sensor.record(size, int(self._clock() * 1000))
