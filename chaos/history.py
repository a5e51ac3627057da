"""What a campaign records, as plain data: every client operation with its time, and every fault.

Times are ``time.monotonic()`` seconds from the run's start. A history round-trips through JSON
(``History.to_json`` / ``History.from_json``) so a failed run can be checked again offline.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass, field, fields


@dataclass
class Produced:
    """One record a producer sent. ``ok`` is the acknowledgement (with ``offset``); ``ok=False`` with an
    ``error`` is a failed delivery, whose record may or may not be in the log (indeterminate)."""
    topic: str
    partition: int
    key: str | None
    value: str
    ok: bool
    offset: int = -1
    error: str = ""
    sent: float = 0.0
    acked: float = 0.0
    txn: str = ""  # transactional: "committed", "aborted" or "unknown" (ended, outcome not known); "" if not
    producer: str = ""  # which producer sent it; with ``seq``, its send order on that producer
    seq: int = 0


@dataclass
class Consumed:
    """One record a consumer returned. ``reader`` names who read it: ``final`` (the read-back after the run),
    ``final-committed`` (read_committed read-back) or a group member ``group:<group>:<member>``."""
    topic: str
    partition: int
    offset: int
    key: str | None
    value: str
    reader: str
    at: float = 0.0


@dataclass
class Commit:
    """Offsets a group committed (acknowledged by its coordinator) for one partition."""
    group: str
    topic: str
    partition: int
    offset: int
    at: float = 0.0


@dataclass
class Watermark:
    """A high watermark a client saw (ListOffsets latest on the partition's leader); ``at`` is when the
    request was sent, so every record acknowledged before ``at`` is below it."""
    topic: str
    partition: int
    high_watermark: int
    at: float = 0.0


@dataclass
class Origin:
    """Who wrote the record stored at ``offset``: its batch's producer id and epoch, and its sequence
    (``chaos.log_origins``, read from the segment files after the run)."""
    topic: str
    partition: int
    offset: int
    producer_id: int
    producer_epoch: int
    sequence: int


@dataclass
class Fault:
    """A fault the nemesis injected on ``target`` over [start, end] (end: when it was healed)."""
    kind: str
    target: str
    start: float
    end: float = -1.0
    note: str = ""


@dataclass
class CopierRun:
    """A transactional copier's inputs (acknowledged writes to its input) and its committed output."""
    input_topic: str
    output_topic: str
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)  # read_committed read-back of the output topic


_KINDS = {"produced": Produced, "consumed": Consumed, "commits": Commit, "watermarks": Watermark,
          "faults": Fault, "copiers": CopierRun, "origins": Origin}


@dataclass
class History:
    """Everything one run recorded; appends are thread-safe (workload threads share one history)."""
    produced: list[Produced] = field(default_factory=list)
    consumed: list[Consumed] = field(default_factory=list)
    commits: list[Commit] = field(default_factory=list)
    watermarks: list[Watermark] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    copiers: list[CopierRun] = field(default_factory=list)
    origins: list[Origin] = field(default_factory=list)
    compacted_topics: list[str] = field(default_factory=list)
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def add(self, item) -> None:
        with self._lock:
            for name, cls in _KINDS.items():
                if isinstance(item, cls):
                    getattr(self, name).append(item)
                    return
        raise TypeError(f"not a history item: {item!r}")

    def snapshot(self, name: str) -> list:
        """A copy of one of the lists (``produced``, ``consumed``, ...) while the workloads still append to it."""
        with self._lock:
            return list(getattr(self, name))

    def to_json(self) -> str:
        with self._lock:
            data = {f.name: getattr(self, f.name) for f in fields(self)}
            out = {k: ([asdict(x) for x in v] if k in _KINDS else v) for k, v in data.items()}
        return json.dumps(out, indent=None, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> History:
        data = json.loads(text)
        kwargs = {k: [_KINDS[k](**x) for x in data.get(k, [])] for k in _KINDS}
        return cls(**kwargs, compacted_topics=data.get("compacted_topics", []), meta=data.get("meta", {}))
