"""pykbroker's streams task assignor places every task on the member Kafka 4.4's StickyTaskAssignor places it on.

``jvm/StreamsAssignorDriver.java`` runs Kafka's own assignor class (from the 4.4 jars ``make deps`` fetches) on
the same inputs as ``coordinator.group.streams_assignor.assign``: seeded random groups of several processes with
one to four members each, members joining and leaving between rounds, each round starting from what the
members own after the last (all of it, or part of it as mid-reconciliation), with standby replicas and
reported changelog offsets. Every round of every chain must give the same member→task map.
A JVM start: ``make test-streams-slow`` (PYKBROKER_STREAMS_SLOW=1); ``tests/coordinator/group/
test_streams_assignor.py`` keeps a few of Kafka's answers in ``make test``.
"""

from __future__ import annotations

import os
import random
import shutil
import string
import subprocess
import uuid
from pathlib import Path

import pytest

from compat_tests.jvm.kafka_broker import jars_dir
from coordinator.group.streams_assignor import assign
from coordinator.group.streams_group_records import TasksTuple

pytestmark = pytest.mark.skipif(os.environ.get("PYKBROKER_STREAMS_SLOW") != "1",
                                reason="a JVM start: make test-streams-slow (PYKBROKER_STREAMS_SLOW=1)")

DRIVER = Path(__file__).resolve().parent / "jvm" / "StreamsAssignorDriver.java"
Task = tuple[str, int]


def _member_id(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits + "_") for _ in range(22))


def _show(tasks) -> str:
    return ",".join(f"{s}-{p}" for s, parts in tasks for p in parts)


class _Case:
    """One assignor input: the group's members (in the order the group holds them) and what they own."""

    def __init__(self, standbys: int, topology: dict[str, tuple[int, bool]], members: dict[str, str],
                 current: dict[str, TasksTuple], offsets: dict[str, dict[Task, int]]) -> None:
        self.standbys, self.topology, self.members = standbys, topology, members
        self.current, self.offsets = current, offsets

    def line(self) -> str:
        fields = [str(self.standbys), ",".join(f"{s}:{n}:{int(st)}" for s, (n, st) in self.topology.items())]
        for m, process in self.members.items():
            cur = self.current.get(m, TasksTuple())
            offs = ",".join(f"{s}-{p}={o}" for (s, p), o in self.offsets.get(m, {}).items())
            fields.append(f"{m};{process};{_show(cur.active)};{_show(cur.standby)};{offs}")
        return "\t".join(fields)

    def ours(self) -> str:
        out = assign(self.members, {s: n for s, (n, _) in self.topology.items()}, self.current, self.standbys,
                     stateful={s for s, (_, st) in self.topology.items() if st}, reported_offsets=self.offsets)
        return "\t".join(f"{m};{_show(t.active)};{_show(t.standby)}" for m, t in sorted(out.items()))


def _partly(rng: random.Random, t: TasksTuple) -> TasksTuple:
    """Part of a target, as a member owns it while it reconciles."""
    def some(tasks):
        return {s: [p for p in parts if rng.random() < 0.6] for s, parts in tasks}
    return TasksTuple.of(active=some(t.active), standby=some(t.standby))


def _chains(seed: int, chains: int, rounds: int, max_processes: int = 4) -> list[_Case]:
    rng = random.Random(seed)
    cases: list[_Case] = []
    for _ in range(chains):
        topology = {str(i): (rng.randint(1, 3 * max_processes), rng.random() < 0.6) for i in range(rng.randint(1, 3))}
        standbys = rng.choice((0, 1, 1, 2))
        processes = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(rng.randint(1, max_processes))]
        members: dict[str, str] = {}
        for p in processes:
            for _ in range(rng.randint(1, 4)):
                members[_member_id(rng)] = p
        current: dict[str, TasksTuple] = {}
        offsets: dict[str, dict[Task, int]] = {}
        for _ in range(rounds):
            case = _Case(standbys, topology, dict(members), dict(current), {m: dict(o) for m, o in offsets.items()})
            cases.append(case)
            target = assign(case.members, {s: n for s, (n, _) in topology.items()}, case.current, standbys,
                            stateful={s for s, (_, st) in topology.items() if st}, reported_offsets=case.offsets)
            whole = rng.random() < 0.6
            current = {m: t if whole else _partly(rng, t) for m, t in target.items()}
            offsets = {m: {(s, p): rng.choice((0, 5, 100, 100, 1000)) for s, parts in (*t.active, *t.standby)
                           for p in parts} for m, t in current.items() if rng.random() < 0.5}
            event = rng.random()
            if event < 0.3 and len(members) > 1:  # a member leaves
                gone = rng.choice(list(members))
                del members[gone]
                current.pop(gone, None)
                offsets.pop(gone, None)
            elif event < 0.7:  # a member joins, of a known process or a new one
                members[_member_id(rng)] = rng.choice(
                    processes + [str(uuid.UUID(int=rng.getrandbits(128)))])
                processes = sorted(set(members.values()))
    return cases


@pytest.fixture(scope="module")
def kafka_jars():
    if shutil.which("java") is None:
        pytest.skip("java is not installed: Kafka's assignor runs from the Maven jars")
    jars = jars_dir("4.4.0")
    assert jars is not None, "compat_tests/jvm/fetch_jars.sh could not fetch Kafka 4.4's jars"
    return jars


def test_every_task_goes_to_the_member_kafka_44_gives_it_to(kafka_jars):
    cases = _chains(seed=33, chains=60, rounds=5) + _chains(seed=44, chains=10, rounds=5, max_processes=12)
    done = subprocess.run(["java", "-cp", f"{kafka_jars}/*", str(DRIVER)], input="\n".join(c.line() for c in cases)
                          + "\n", capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-4000:]
    theirs = done.stdout.splitlines()
    assert len(theirs) == len(cases)
    differ = [(c.line(), t, c.ours()) for c, t in zip(cases, theirs, strict=True) if c.ours() != t]
    assert not differ, f"{len(differ)} of {len(cases)} rounds differ; the first:\n" + "\n".join(differ[0])
