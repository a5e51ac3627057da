"""What the request path counts, as plain integers and sample windows: nothing is formatted until a scrape.

The produce path pays one dictionary lookup and a few additions per partition and one tuple appended per
request; gauges (partition counts, log sizes, group states, connections) are not recorded at all but read
from the broker's state when scraped (pykbroker.metrics.collector).

Request times keep the last ``SAMPLES`` requests per API (Kafka's histograms keep a reservoir of 1,028
samples biased to the last five minutes; a window of the last 1,028 is the same for a steady load).
Everything here runs on the event loop thread, except ``flush`` timings (storage threads), which only
append to a deque.
"""

from __future__ import annotations

import time
from collections import deque

from wire import ApiKey

__all__ = ["Recorder", "TopicStats", "RequestStats", "ThrottleStats", "SAMPLES", "REQUEST_TIMES", "REQUEST_NAMES"]

# Kafka's names of the APIs, as its RequestMetrics ``request`` tag has them (API_VERSIONS -> ApiVersions).
REQUEST_NAMES = {int(k): "".join(part.capitalize() for part in k.name.split("_")) for k in ApiKey}
# API versions counted per API (Kafka's highest today is below 20; a request above is refused before).
MAX_VERSIONS = 64
# Samples kept per histogram: Kafka's (Yammer's) reservoir size.
SAMPLES = 1028
# The parts of a request's time, in the order kept per sample: Kafka's RequestMetrics histograms.
REQUEST_TIMES = ("RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ThrottleTimeMs", "ResponseQueueTimeMs",
                 "ResponseSendTimeMs", "TotalTimeMs")


class TopicStats:
    """Kafka's BrokerTopicMetrics of one topic (or of all topics), as running totals."""

    __slots__ = ("bytes_in", "messages_in", "bytes_out", "total_produce", "failed_produce", "total_fetch",
                 "failed_fetch")

    def __init__(self) -> None:
        self.bytes_in = 0
        self.messages_in = 0
        self.bytes_out = 0
        self.total_produce = 0
        self.failed_produce = 0
        self.total_fetch = 0
        self.failed_fetch = 0

    def add(self, other: TopicStats) -> None:
        for name in TopicStats.__slots__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


class RequestStats:
    """Kafka's RequestMetrics of one API: requests per version, and the last SAMPLES requests as recorded
    (size and perf_counter times, turned into REQUEST_TIMES only when scraped)."""

    __slots__ = ("name", "by_version", "samples")

    def __init__(self, name: str) -> None:
        self.name = name
        self.by_version = [0] * MAX_VERSIONS  # requests per API version
        self.samples: deque[tuple[int, float, float, float, float, float, float, int]] = deque(maxlen=SAMPLES)

    @property
    def count(self) -> int:
        return sum(self.by_version)

    def versions(self) -> dict[int, int]:
        return {v: n for v, n in enumerate(self.by_version) if n}

    def times_ms(self) -> list[tuple[float, ...]]:
        """The samples' REQUEST_TIMES in ms (see ``Recorder.request`` for what each is)."""
        out: list[tuple[float, ...]] = []
        for _size, arrived, started, local_s, handled, send_started, sent, throttle_ms in list(self.samples):
            out.append(((started - arrived) * 1000, local_s * 1000, max(handled - started - local_s, 0.0) * 1000,
                        float(throttle_ms), (send_started - handled) * 1000, (sent - send_started) * 1000,
                        (sent - arrived) * 1000))
        return out

    def sizes(self) -> list[int]:
        return [sample[0] for sample in list(self.samples)]


class ThrottleStats:
    """Throttles given to one (quota type, user, client id): Kafka's ``throttle-time`` sensor (avg over its
    window) and the count and total, kept as (time, ms) over the last ``window_s``."""

    __slots__ = ("recent", "count", "total_ms")

    def __init__(self) -> None:
        self.recent: deque[tuple[float, int]] = deque(maxlen=SAMPLES)
        self.count = 0
        self.total_ms = 0


class Recorder:
    """The broker's running counts; one instance per broker while metrics or the console are on."""

    def __init__(self) -> None:
        self.started = time.time()
        self.topics: dict[str, TopicStats] = {}
        self.deleted_topics = TopicStats()  # the counts of topics deleted since: still in the all-topics totals
        self.requests: dict[int, RequestStats] = {}  # by API key
        self.isr_shrinks = 0
        self.isr_expands = 0
        self.connections_created: dict[str, int] = {}
        self.connections_closed: dict[str, int] = {}
        self.throttles: dict[tuple[str, str, str], ThrottleStats] = {}
        self.flush_times_ms: deque[float] = deque(maxlen=SAMPLES)
        self.flushes = 0

    def topic(self, name: str) -> TopicStats:
        stats = self.topics.get(name)
        if stats is None:
            stats = self.topics[name] = TopicStats()
        return stats

    def forget_topic(self, name: str) -> None:
        """A deleted topic's series go away, as Kafka removes its BrokerTopicMetrics (its counts stay in
        the all-topics totals)."""
        stats = self.topics.pop(name, None)
        if stats is not None:
            self.deleted_topics.add(stats)

    @property
    def all_topics(self) -> TopicStats:
        """Kafka's BrokerTopicMetrics without a topic: every topic's, deleted ones included."""
        total = TopicStats()
        total.add(self.deleted_topics)
        for stats in list(self.topics.values()):
            total.add(stats)
        return total

    # -- the data path -----------------------------------------------------------------------------------
    def appended(self, topic: str, size: int, messages: int) -> None:
        """A produce (or coordinator) append of ``size`` bytes and ``messages`` records to ``topic``."""
        stats = self.topics.get(topic)
        if stats is None:
            stats = self.topic(topic)
        stats.bytes_in += size
        stats.messages_in += messages
        stats.total_produce += 1

    def append_failed(self, topic: str) -> None:
        """A partition's append refused unexpectedly (Kafka's failedProduceRequestRate marks it)."""
        stats = self.topics.get(topic) or self.topic(topic)
        stats.total_produce += 1
        stats.failed_produce += 1

    def append_refused(self, topic: str) -> None:
        """A partition's append refused as Kafka expects (not leader, too large, corrupt, disk): a produce request,
        not a failed one."""
        stats = self.topics.get(topic) or self.topic(topic)
        stats.total_produce += 1

    def fetched(self, topic: str, size: int, failed: bool) -> None:
        """One partition of a consumer's fetch answered with ``size`` bytes (followers' are not counted)."""
        stats = self.topics.get(topic) or self.topic(topic)
        stats.total_fetch += 1
        if failed:
            stats.failed_fetch += 1
        else:
            stats.bytes_out += size

    def request(self, api_key: int, version: int, size: int, arrived: float, started: float, local_s: float,
                handled: float, send_started: float, sent: float, throttle_ms: int) -> None:
        """One request answered (perf_counter times): it arrived (its frame was read and the previous
        request of its connection answered), its handler ``started``, worked ``local_s`` of the time until
        it ``handled`` it (the rest it waited: remote), its response was handed to the writer at
        ``send_started`` and written (or queued) by ``sent``. Kept as given; the split is computed when
        scraped (RequestStats.times_ms)."""
        stats = self.requests.get(api_key)
        if stats is None:
            stats = self.requests[api_key] = RequestStats(REQUEST_NAMES.get(api_key, str(api_key)))
        stats.by_version[version] += 1
        stats.samples.append((size, arrived or started, started, local_s, handled, send_started, sent, throttle_ms))

    # -- replication, connections, quotas, storage -------------------------------------------------------
    def isr_changed(self, old: list[int], new: list[int]) -> None:
        if len(new) < len(old):
            self.isr_shrinks += 1
        elif len(new) > len(old):
            self.isr_expands += 1

    def connection_created(self, listener: str) -> None:
        self.connections_created[listener] = self.connections_created.get(listener, 0) + 1

    def connection_closed(self, listener: str) -> None:
        self.connections_closed[listener] = self.connections_closed.get(listener, 0) + 1

    def throttled(self, quota_type: str, user: str, client_id: str, throttle_ms: int) -> None:
        """A ``quota_type`` (Produce, Fetch, Request) quota throttled a request of (user, client id)."""
        key = (quota_type, user, client_id)
        stats = self.throttles.get(key)
        if stats is None:
            stats = self.throttles[key] = ThrottleStats()
        stats.recent.append((time.monotonic(), throttle_ms))
        stats.count += 1
        stats.total_ms += throttle_ms

    def flushed(self, millis: float) -> None:
        """One log flush (fsync) took ``millis``; called from storage threads (deque appends are atomic)."""
        self.flush_times_ms.append(millis)
        self.flushes += 1
