"""A byte rate measured over sampled windows (Kafka's Rate over a SampledStat): what every byte-rate quota
measures (client quotas, replication throttles, the remote log manager's copy and fetch quotas)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["SampledRate"]


@dataclass
class SampledRate:
    """Bytes in ``samples`` windows of ``window_ms`` (Kafka's Rate over a SampledStat)."""

    samples: int
    window_ms: int
    windows: list[list[float]] = field(default_factory=list)  # [start ms, total]

    def record(self, value: float, now_ms: int) -> None:
        if not self.windows or now_ms - self.windows[-1][0] >= self.window_ms:
            self.windows.append([now_ms, 0.0])
        self.windows[-1][1] += value
        oldest_kept = now_ms - self.samples * self.window_ms
        while len(self.windows) > 1 and self.windows[0][0] + self.window_ms <= oldest_kept:
            self.windows.pop(0)

    def rate_and_window(self, now_ms: int) -> tuple[float, float]:
        """(bytes per second, window ms) with Kafka's window: at least samples-1 whole windows."""
        elapsed = now_ms - self.windows[0][0]
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        window = max(elapsed, 1)
        return sum(total for _, total in self.windows) * 1000.0 / window, window
