"""A streams group's server-side task assignment (a simple form of Kafka's StickyTaskAssignor).

Active tasks are spread evenly over the members, each keeping the active tasks its previous target gave it as
far as its share allows; each task of a stateful sub-topology (one with a state changelog) then gets
``num_standby_replicas`` standby copies on members of other processes than its active one (fewer when there
are not enough processes), as Kafka gives stateless tasks none. With rack-aware assignment tags, a standby goes
first to a member whose tag values differ from those of the task's other copies (Kafka's client-tag-aware
standby placement), then to a member already holding the task's state (its previous standby, or the most
changelog offset reported), then to the least loaded. No warm-up tasks, as Kafka 4.4's sticky assignor.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from coordinator.group.streams_group_records import TasksTuple

__all__ = ["assign"]

Task = tuple[str, int]


def _tasks_tuple(active: set[Task], standby: set[Task]) -> TasksTuple:
    def group(tasks: set[Task]) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for s, p in tasks:
            out.setdefault(s, []).append(p)
        return out
    return TasksTuple.of(active=group(active), standby=group(standby))


def assign(members: Mapping[str, str], tasks: Mapping[str, int], previous: Mapping[str, TasksTuple],
           num_standby_replicas: int = 0, stateful: Collection[str] | None = None,
           client_tags: Mapping[str, Mapping[str, str]] | None = None,
           tag_keys: Sequence[str] = (),
           reported_offsets: Mapping[str, Mapping[Task, int]] | None = None) -> dict[str, TasksTuple]:
    """``members``: member id -> process id; ``tasks``: sub-topology -> number of tasks; ``stateful``: the
    sub-topologies whose tasks get standby copies (None: all); ``client_tags``: member id -> its tags;
    ``reported_offsets``: member id -> the changelog offset it reported for each task it has state of."""
    if not members:
        return {}
    order = sorted(members)
    all_tasks = sorted((s, p) for s, n in tasks.items() for p in range(n))
    quota, extra = divmod(len(all_tasks), len(order))
    # The members that held the most active tasks get the extra ones: fewer tasks move.
    held = {m: sum(len(parts) for _, parts in previous[m].active) if m in previous else 0 for m in order}
    limit = {m: quota + (1 if i < extra else 0) for i, m in enumerate(sorted(order, key=lambda x: (-held[x], x)))}
    active: dict[str, set[Task]] = {m: set() for m in order}
    owner: dict[Task, str] = {}
    valid = set(all_tasks)
    for m in order:  # stickiness: keep previous active tasks up to the member's share
        for s, parts in (previous[m].active if m in previous else ()):
            for p in parts:
                if (s, p) in valid and (s, p) not in owner and len(active[m]) < limit[m]:
                    active[m].add((s, p))
                    owner[(s, p)] = m
    for t in all_tasks:
        if t not in owner:
            m = min(order, key=lambda x: (len(active[x]) >= limit[x], len(active[x]), x))
            active[m].add(t)
            owner[t] = m
    standby: dict[str, set[Task]] = {m: set() for m in order}
    tags = client_tags or {}
    offsets = reported_offsets or {}
    had_standby = {m: {(s, p) for s, parts in previous[m].standby for p in parts} if m in previous else set()
                   for m in order}
    stateful_tasks = sum(1 for t in all_tasks if stateful is None or t[0] in stateful)
    fair = -(-(len(all_tasks) + stateful_tasks * num_standby_replicas) // len(order))  # tasks per member, rounded up

    def tag_clashes(member: str, copies: list[str]) -> int:
        """How many of the tag keys give ``member`` a value one of the task's copies already has."""
        mine = tags.get(member, {})
        return sum(1 for key in tag_keys if key in mine and any(tags.get(c, {}).get(key) == mine[key] for c in copies))

    for t in all_tasks:
        if stateful is not None and t[0] not in stateful:
            continue
        used = {members[owner[t]]}
        copies = [owner[t]]
        for _ in range(num_standby_replicas):
            candidates = [m for m in order if members[m] not in used]
            if not candidates:
                break
            # Kafka's ranking of standby candidates: the member already holding the task's state (its previous
            # standby, or the most reported changelog offset) unless that overloads it, then the least loaded.
            m = min(candidates, key=lambda x: (
                tag_clashes(x, copies), len(standby[x]) + len(active[x]) >= fair,
                t not in had_standby[x] and t not in offsets.get(x, {}), -offsets.get(x, {}).get(t, -1),
                len(standby[x]) + len(active[x]), x))
            standby[m].add(t)
            used.add(members[m])
            copies.append(m)
    return {m: _tasks_tuple(active[m], standby[m]) for m in order}
