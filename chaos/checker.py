"""The checker: pure functions over a recorded ``History``, one per promise Kafka makes.

Each check returns a ``CheckResult`` (what it looked at, its violations). A violation names the records
involved and the faults whose window (start to heal plus ``GRACE`` seconds) it fell in. Nothing here does
I/O; ``check_all`` runs every check, ``unavailability`` measures the gaps in acknowledged writes per fault.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from chaos.history import Commit, Consumed, Fault, History, Origin, Produced

GRACE = 10.0  # seconds after a fault's heal during which its effects (elections, rejoins) still count


@dataclass
class Violation:
    check: str
    message: str
    at: float
    records: list = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)

    def __str__(self) -> str:
        where = ", ".join(f"{f.kind}({f.target}) {f.start:.1f}-{f.end:.1f}s" for f in self.faults) or "no fault"
        recs = "; ".join(str(r) for r in self.records[:6])
        return f"[{self.check}] t={self.at:.1f}s {self.message} | during: {where} | records: {recs}"


@dataclass
class CheckResult:
    """``explained``: what looked like a violation but is shown not to be the broker's (each says why)."""
    name: str
    checked: int
    violations: list[Violation]
    explained: list[Violation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations


def faults_at(faults: list[Fault], t: float, grace: float = GRACE) -> list[Fault]:
    """The faults whose window contains ``t``; an unhealed fault (end < 0) lasts forever."""
    return [f for f in faults if f.start <= t and (f.end < 0 or t <= f.end + grace)]


def _violation(h: History, check: str, message: str, at: float, records: list) -> Violation:
    return Violation(check, message, at, records, faults_at(h.faults, at))


def _final_reads(h: History, reader: str = "final") -> dict[tuple[str, int], list[Consumed]]:
    out: dict[tuple[str, int], list[Consumed]] = defaultdict(list)
    for c in h.consumed:
        if c.reader == reader:
            out[(c.topic, c.partition)].append(c)
    for records in out.values():
        records.sort(key=lambda c: c.offset)
    return out


def _plain_acked(h: History) -> list[Produced]:
    return [p for p in h.produced if p.ok and not p.txn and p.topic not in h.compacted_topics]


def _known(p: Produced) -> bool:
    """An acknowledgement that named its offset. librdkafka also acknowledges a record without one when it
    learns from the broker that a retried batch was already written (DUPLICATE_SEQUENCE_NUMBER or a later
    sequence acknowledged): such a record must still be read back once, but where is not known."""
    return p.offset is not None and p.offset >= 0


def check_acknowledged_read_once(h: History) -> CheckResult:
    """Every acknowledged (non-transactional) record is read back once, at the offset its acknowledgement
    named; no record of an idempotent producer is stored twice; each producer's records are in send order."""
    name = "acknowledged records read back exactly once, in order"
    violations: list[Violation] = []
    explained: list[Violation] = []
    final = _final_reads(h)
    acked = _plain_acked(h)
    origins = {(o.topic, o.partition, o.offset): o for o in h.origins}
    by_value: dict[tuple[str, int], dict[str, list[Consumed]]] = defaultdict(lambda: defaultdict(list))
    for tp, records in final.items():
        if tp[0] in h.compacted_topics:
            continue
        for c in records:
            by_value[tp][c.value].append(c)
        for value, copies in by_value[tp].items():
            if len(copies) > 1:
                writers = [origins.get((c.topic, c.partition, c.offset)) for c in copies]
                message = f"{tp[0]}-{tp[1]}: {value!r} stored {len(copies)} times"
                if _resent_under_new_epochs(writers):
                    explained.append(_violation(h, name, f"{message}, by one producer id under epochs "
                                                f"{[w.producer_epoch for w in writers if w]}: the client resent it "
                                                f"after bumping its epoch, which no broker can deduplicate",
                                                copies[0].at, [*copies, *writers]))
                else:
                    violations.append(_violation(h, name, f"{message} (writers {writers})" if any(writers) else message,
                                                 copies[0].at, copies))
    for p in acked:
        copies = by_value[(p.topic, p.partition)].get(p.value, [])
        if not copies:
            violations.append(_violation(h, name, f"{p.topic}-{p.partition}: acknowledged {p.value!r} at offset "
                                         f"{p.offset} is lost", p.acked, [p]))
        elif _known(p) and all(c.offset != p.offset for c in copies):
            violations.append(_violation(h, name, f"{p.topic}-{p.partition}: acknowledged {p.value!r} at offset "
                                         f"{p.offset} is stored at {[c.offset for c in copies]}", p.acked, [p, *copies]))
    per_producer: dict[tuple, list[Produced]] = defaultdict(list)
    for p in acked:
        if _known(p):
            per_producer[(p.producer, p.topic, p.partition)].append(p)
    for (_, topic, partition), sent in per_producer.items():
        sent.sort(key=lambda p: p.seq)
        for a, b in zip(sent, sent[1:], strict=False):
            if b.offset <= a.offset:
                violations.append(_violation(h, name, f"{topic}-{partition}: {b.value!r} sent after {a.value!r} "
                                             f"but acknowledged at offset {b.offset} <= {a.offset}", b.acked, [a, b]))
    return CheckResult(name, len(acked), violations, explained)


def _resent_under_new_epochs(writers: list[Origin | None]) -> bool:
    """Copies of one record written by one producer id, each under an epoch of its own."""
    known = [w for w in writers if w is not None]
    return bool(known) and len(known) == len(writers) and len({w.producer_id for w in known}) == 1 and \
        known[0].producer_id >= 0 and len({w.producer_epoch for w in known}) == len(known)


def check_offsets_unique(h: History) -> CheckResult:
    """An offset holds one record forever: no two acknowledgements name the same offset, and every reader
    (group members, read-backs) sees the same record at an offset (consumers read below the high
    watermark, which is never truncated)."""
    name = "offsets never reused"
    violations: list[Violation] = []
    seen: dict[tuple[str, int, int], Produced | Consumed] = {}
    checked = 0
    for p in h.produced:
        if not p.ok or not _known(p):
            continue
        checked += 1
        key = (p.topic, p.partition, p.offset)
        other = seen.setdefault(key, p)
        if other is not p and other.value != p.value:
            violations.append(_violation(h, name, f"{p.topic}-{p.partition} offset {p.offset} acknowledged for "
                                         f"{other.value!r} and {p.value!r}", p.acked, [other, p]))
    for c in h.consumed:
        checked += 1
        key = (c.topic, c.partition, c.offset)
        other = seen.setdefault(key, c)
        if other is not c and other.value != c.value:
            violations.append(_violation(h, name, f"{c.topic}-{c.partition} offset {c.offset} holds {other.value!r} "
                                         f"and {c.value!r} (read by {c.reader})", c.at, [other, c]))
    return CheckResult(name, checked, violations)


def check_groups_skip_nothing(h: History) -> CheckResult:
    """A consumer group never skips acknowledged data: every acknowledged offset below the group's last
    committed offset was returned to one of its members."""
    name = "groups never skip acknowledged records"
    violations: list[Violation] = []
    last_commit: dict[tuple[str, str, int], tuple[int, float]] = {}
    for commit in sorted(h.commits, key=lambda c: c.at):
        last_commit[(commit.group, commit.topic, commit.partition)] = (commit.offset, commit.at)
    read: dict[tuple[str, str, int], set[int]] = defaultdict(set)
    for c in h.consumed:
        if c.reader.startswith("group:"):
            read[(c.reader.split(":")[1], c.topic, c.partition)].add(c.offset)
    acked_by_tp: dict[tuple[str, int], list[Produced]] = defaultdict(list)
    for p in h.produced:
        if p.ok and not p.txn and _known(p):
            acked_by_tp[(p.topic, p.partition)].append(p)
    checked = 0
    for (group, topic, partition), (committed, _) in last_commit.items():
        missing = [p for p in acked_by_tp[(topic, partition)]
                   if p.offset < committed and p.offset not in read[(group, topic, partition)]]
        checked += sum(1 for p in acked_by_tp[(topic, partition)] if p.offset < committed)
        if missing:
            missing.sort(key=lambda p: p.offset)
            violations.append(_violation(h, name, f"group {group} committed {topic}-{partition} at {committed} "
                                         f"without reading {len(missing)} acknowledged records (offsets "
                                         f"{missing[0].offset}..{missing[-1].offset})", missing[0].acked, missing))
    return CheckResult(name, checked, violations)


def check_commits_monotonic(h: History) -> CheckResult:
    """A group's committed offset of a partition never moves backwards."""
    name = "committed offsets never go backwards"
    violations: list[Violation] = []
    last: dict[tuple[str, str, int], Commit] = {}
    for c in sorted(h.commits, key=lambda c: c.at):
        key = (c.group, c.topic, c.partition)
        prev = last.get(key)
        if prev is not None and c.offset < prev.offset:
            violations.append(_violation(h, name, f"group {c.group} {c.topic}-{c.partition} committed {c.offset} "
                                         f"after {prev.offset}", c.at, [prev, c]))
        last[key] = c
    return CheckResult(name, len(h.commits), violations)


def check_read_committed(h: History) -> CheckResult:
    """read_committed never returns a record of an aborted transaction and returns every committed
    transaction whole (each of its records, once); a transaction whose outcome its producer never learnt
    (``txn="unknown"``: the client gave up, or its process died) is returned whole or not at all."""
    name = "read_committed sees committed transactions whole, never aborted ones"
    violations: list[Violation] = []
    txn = [p for p in h.produced if p.txn]
    if not txn:
        return CheckResult(name, 0, [])
    topics = {p.topic for p in txn}
    seen = Counter((c.topic, c.value) for c in h.consumed if c.reader == "final-committed" and c.topic in topics)
    status = {(p.topic, p.value): p for p in txn}
    for p in txn:
        n = seen.get((p.topic, p.value), 0)
        if p.txn == "aborted" and n:
            violations.append(_violation(h, name, f"{p.topic}: aborted {p.value!r} read {n} times", p.acked, [p]))
        elif p.txn == "committed" and n != 1:
            violations.append(_violation(h, name, f"{p.topic}: committed {p.value!r} read {n} times", p.acked, [p]))
    unknown: dict[tuple[str, str], list[Produced]] = defaultdict(list)  # (topic, "<producer>-<txn>") -> records
    for p in txn:
        if p.txn == "unknown":
            unknown[(p.topic, p.value.rsplit("-", 1)[0])].append(p)
    for (topic, transaction), records in unknown.items():
        counts = {seen.get((topic, p.value), 0) for p in records}
        if counts not in ({0}, {1}):
            violations.append(_violation(h, name, f"{topic}: transaction {transaction!r} of unknown outcome read "
                                         f"partly or more than once: {sorted(seen.get((topic, p.value), 0) for p in records)}",
                                         records[0].acked, records))
    for topic, value in seen:
        if (topic, value) not in status:
            violations.append(_violation(h, name, f"{topic}: {value!r} read but never produced", 0.0, []))
    return CheckResult(name, len(txn), violations)


def check_copiers(h: History) -> CheckResult:
    """A transactional copier (compat_tests/eos_copier: output = input upper-cased) outputs every input
    exactly once in its read_committed output, and nothing else."""
    name = "every copier input output exactly once"
    violations: list[Violation] = []
    checked = 0
    for run in h.copiers:
        expected = Counter(v.upper() for v in run.inputs)
        got = Counter(run.outputs)
        checked += len(run.inputs)
        for value in sorted(set(expected) | set(got)):
            if expected[value] != got[value]:
                violations.append(_violation(h, name, f"{run.input_topic}->{run.output_topic}: {value!r} expected "
                                             f"{expected[value]} times, output {got[value]} times", 0.0, [value]))
    return CheckResult(name, checked, violations)


def check_compacted_last_value(h: History) -> CheckResult:
    """A compacted topic keeps, for each key of each partition, its last acknowledged value (or a later write whose delivery
    failed and so may or may not have landed)."""
    name = "compacted topics keep the last acknowledged value per key"
    violations: list[Violation] = []
    checked = 0
    final = _final_reads(h)
    for topic in h.compacted_topics:
        writes: dict[tuple[int, str | None], list[Produced]] = defaultdict(list)
        for p in h.produced:
            if p.topic == topic:
                writes[(p.partition, p.key)].append(p)
        stored: dict[tuple[int, str | None], Consumed] = {}
        for (t, partition), records in final.items():
            if t == topic:
                for c in records:
                    stored[(partition, c.key)] = c  # records are in offset order: the last one wins
        for key, ws in writes.items():
            acked = [w for w in ws if w.ok]
            if not acked:
                continue
            checked += 1
            known = [w for w in acked if _known(w)]
            last = max(known, key=lambda w: w.offset) if known else max(acked, key=lambda w: w.seq)
            # an acknowledgement without an offset may be the last write too, if sent after ``last``
            allowed = {last.value} | {w.value for w in ws if w.seq > last.seq and (not w.ok or not _known(w))}
            have = stored.get(key)
            if have is None or have.value not in allowed:
                violations.append(_violation(h, name, f"{topic}-{key[0]} key {key[1]!r}: last acknowledged {last.value!r} "
                                             f"(offset {last.offset}), stored "
                                             f"{None if have is None else (have.value, have.offset)}",
                                             last.acked, [last, have]))
    return CheckResult(name, checked, violations)


def check_high_watermark(h: History) -> CheckResult:
    """The high watermark a client sees never moves backwards, and is past every record acknowledged
    (acks=all) before the client asked."""
    name = "high watermark never moves backwards"
    violations: list[Violation] = []
    by_tp: dict[tuple[str, int], list] = defaultdict(list)
    for w in h.watermarks:
        by_tp[(w.topic, w.partition)].append(w)
    acked_by_tp: dict[tuple[str, int], list[Produced]] = defaultdict(list)
    for p in h.produced:
        if p.ok and not p.txn and _known(p):
            acked_by_tp[(p.topic, p.partition)].append(p)
    for tp, ws in by_tp.items():
        ws.sort(key=lambda w: w.at)
        acks = sorted(acked_by_tp[tp], key=lambda p: p.acked)
        i, highest = 0, None
        for prev, w in zip([None, *ws], ws, strict=False):
            if prev is not None and w.high_watermark < prev.high_watermark:
                violations.append(_violation(h, name, f"{tp[0]}-{tp[1]} high watermark {prev.high_watermark} then "
                                             f"{w.high_watermark}", w.at, [prev, w]))
            while i < len(acks) and acks[i].acked < w.at:
                if highest is None or acks[i].offset > highest.offset:
                    highest = acks[i]
                i += 1
            if highest is not None and w.high_watermark <= highest.offset:
                violations.append(_violation(h, name, f"{tp[0]}-{tp[1]} high watermark {w.high_watermark} below "
                                             f"offset {highest.offset} acknowledged before", w.at, [highest, w]))
    return CheckResult(name, len(h.watermarks), violations)


CHECKS = (check_acknowledged_read_once, check_offsets_unique, check_groups_skip_nothing, check_commits_monotonic,
          check_read_committed, check_copiers, check_compacted_last_value, check_high_watermark)


def check_all(h: History) -> list[CheckResult]:
    return [check(h) for check in CHECKS]


def unavailability(h: History) -> dict[str, list[float]]:
    """Per fault kind, each fault's unavailability: the longest stretch without an acknowledged write to
    any one partition (of non-transactional, non-compacted topics), from the fault's start until that
    partition's first acknowledgement after the heal, or the next fault's start if that comes first: a
    stretch running into the next fault is that fault's too, and counted there (seconds)."""
    acks_by_tp: dict[tuple[str, int], list[float]] = defaultdict(list)
    for p in _plain_acked(h):
        acks_by_tp[(p.topic, p.partition)].append(p.acked)
    for acks in acks_by_tp.values():
        acks.sort()
    out: dict[str, list[float]] = defaultdict(list)
    faults = sorted(h.faults, key=lambda f: f.start)
    for f, following in zip(faults, [*faults[1:], None], strict=True):
        worst = 0.0
        for acks in acks_by_tp.values():
            end = f.end if f.end >= 0 else (acks[-1] if acks else f.start)
            points = [f.start] + [t for t in acks if f.start < t <= end]
            after = next((t for t in acks if t > end), None)
            if following is not None and following.start > end:
                after = following.start if after is None else min(after, following.start)
            if after is not None:
                points.append(after)
            worst = max(worst, *(b - a for a, b in zip(points, points[1:], strict=False)), 0.0)
        out[f.kind].append(worst)
    return dict(out)
