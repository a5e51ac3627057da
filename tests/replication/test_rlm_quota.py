"""Kafka's RLMQuotaManager semantics: a windowed byte rate, the throttle time it takes to get back to the bound,
and the throttle-time sensor's average and maximum over its samples."""

from __future__ import annotations

import math

from replication.rlm_quota import UNLIMITED, RLMQuotaManager, ThrottleTimeSensor


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_copies_are_recorded_whole_and_throttled_until_the_windowed_rate_is_back_at_the_bound():
    clock = Clock()
    quota = RLMQuotaManager(10_000, samples=11, window_seconds=1, clock=clock)
    assert quota.throttle_time_ms() == 0
    # Kafka's rate divides by at least samples - 1 windows: 100 kB at once is exactly 10 kB/s, not above it.
    quota.record(100_000)
    assert quota.throttle_time_ms() == 0 and not quota.is_quota_exceeded()
    quota.record(50_000)  # 150 kB over 10 s: 50% above the bound, for half the window
    assert quota.throttle_time_ms() == 5_000
    clock.now += 5  # still 150 kB over (at least) 10 s: the throttle time is Kafka's estimate, asked again
    assert quota.throttle_time_ms() == 5_000
    clock.now += 10
    assert quota.throttle_time_ms() == 0  # 150 kB over 15 s
    clock.now += 20  # the samples have expired: a new segment goes at once
    quota.record(20_000)
    assert quota.throttle_time_ms() == 0


def test_an_unlimited_quota_never_throttles_and_the_bound_is_dynamic():
    quota = RLMQuotaManager(UNLIMITED, clock=Clock())
    quota.record(1 << 40)
    assert quota.throttle_time_ms() == 0
    quota.bytes_per_second = 1_000
    assert quota.throttle_time_ms() > 0


def test_throttle_time_average_and_maximum_over_the_last_two_30_second_samples():
    clock = Clock()
    sensor = ThrottleTimeSensor(clock=clock)
    assert math.isnan(sensor.avg()) and math.isnan(sensor.max())
    sensor.record(100)
    sensor.record(300)
    assert sensor.avg() == 200 and sensor.max() == 300
    clock.now += 61
    assert math.isnan(sensor.max())
