"""Server-side assignors: every subscribed partition exactly once, balanced, sticky."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.group.assignors import GroupSpec, MemberSpec, RangeAssignor, UniformAssignor

T1, T2, T3 = (uuid.UUID(int=i) for i in (1, 2, 3))
PARTITIONS = {T1: 6, T2: 3, T3: 1}


def spec(subs: dict[str, set], current: dict[str, dict] | None = None, instances: dict[str, str] | None = None):
    current = current or {}
    instances = instances or {}
    members = {m: MemberSpec(m, instances.get(m), None, frozenset(t), {k: frozenset(v) for k, v in
                                                                      current.get(m, {}).items()})
               for m, t in subs.items()}
    return GroupSpec(members, homogeneous=len({frozenset(t) for t in subs.values()}) <= 1)


def owners(result) -> dict[tuple, list[str]]:
    out: dict[tuple, list[str]] = {}
    for m, topics in result.items():
        for t, ps in topics.items():
            for p in ps:
                out.setdefault((t, p), []).append(m)
    return out


def check_complete(result, subs):
    o = owners(result)
    for t in set().union(*subs.values()):
        for p in range(PARTITIONS[t]):
            assert len(o.get((t, p), [])) == 1, (t, p, o.get((t, p)))
    for (t, _), ms in o.items():
        assert all(t in subs[m] for m in ms)


def test_uniform_homogeneous_balance_and_stickiness():
    subs = {"m1": {T1, T2}, "m2": {T1, T2}, "m3": {T1, T2}}
    first = UniformAssignor().assign(spec(subs), PARTITIONS.__getitem__)
    check_complete(first, subs)
    sizes = sorted(sum(len(p) for p in a.values()) for a in first.values())
    assert sizes == [3, 3, 3]
    # m3 leaves: m1 and m2 keep what they had and share m3's partitions.
    subs2 = {"m1": subs["m1"], "m2": subs["m2"]}
    second = UniformAssignor().assign(spec(subs2, {m: first[m] for m in subs2}), PARTITIONS.__getitem__)
    check_complete(second, subs2)
    for m in subs2:
        for t, ps in first[m].items():
            assert ps <= second[m].get(t, frozenset())


def test_uniform_heterogeneous():
    subs = {"m1": {T1}, "m2": {T1, T2}, "m3": {T3}}
    result = UniformAssignor().assign(spec(subs), PARTITIONS.__getitem__)
    check_complete(result, subs)
    assert result["m3"] == {T3: frozenset({0})}
    assert abs(sum(len(p) for p in result["m1"].values()) - sum(len(p) for p in result["m2"].values())) <= 1


def test_range_is_contiguous_and_co_partitioned():
    subs = {"b": {T1, T2}, "a": {T1, T2}}
    result = RangeAssignor().assign(spec(subs), {T1: 3, T2: 3}.__getitem__)
    assert result["a"] == {T1: frozenset({0, 1}), T2: frozenset({0, 1})}
    assert result["b"] == {T1: frozenset({2}), T2: frozenset({2})}
    # Static members sort first, by instance id.
    result = RangeAssignor().assign(spec(subs, instances={"b": "i0"}), {T1: 3, T2: 3}.__getitem__)
    assert result["b"] == {T1: frozenset({0, 1}), T2: frozenset({0, 1})}


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text("mn", min_size=1, max_size=3),
                       st.sets(st.sampled_from([T1, T2, T3]), min_size=1), min_size=1, max_size=6),
       st.booleans())
def test_every_partition_assigned_once(subs, use_range):
    assignor = RangeAssignor() if use_range else UniformAssignor()
    result = assignor.assign(spec(subs), PARTITIONS.__getitem__)
    check_complete(result, subs)
    if not use_range and len({frozenset(t) for t in subs.values()}) == 1:
        sizes = [sum(len(p) for p in a.values()) for a in result.values()]
        assert max(sizes) - min(sizes) <= 1
