"""A streams group's server-side task assignment: Kafka 4.4's StickyTaskAssignor ("sticky"), to the member.

Tasks go to processes and, within a process, to its members:

1. Active tasks, taken in (partition, sub-topology) order: first each to the member that owns it now, then
   each to the member ranked first of those holding its state (a current standby, then the largest reported
   changelog offset) whose process and member both have the least load, each only while that member holds
   fewer tasks than the active quota (tasks left over members left, rounded up, recomputed whenever a member
   reaches it). The rest, in (sub-topology, partition) order, each to the least loaded process (tasks per
   member) and its least loaded member.
2. ``num_standby_replicas`` copies of each task of a stateful sub-topology (one with a state changelog), in
   descending (partition, sub-topology) order: to the task's previous active owner if its process holds no
   copy, else to the best of its state holders on a process without a copy, while under the total quota;
   the rest, in descending (sub-topology, partition) order, to the least loaded process without a copy.

Which process and member win a tie is Java's: members and processes are visited in ``HashMap`` order and
"least loaded" is the head of a ``java.util.PriorityQueue`` (``wire.java``), so the same conversation gives
the same member→task map as Kafka. Kafka 4.4's sticky assignor gives no warm-up tasks and ignores rack-aware
assignment tags (members lacking them are still told, by the heartbeat); neither does this.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from coordinator.group.streams_group_records import TasksTuple
from wire.java import PriorityQueue, hash_map_order

__all__ = ["assign"]

Task = tuple[str, int]


def _compare(a: float, b: float) -> int:
    return (a > b) - (a < b)


def _utf16(s: str) -> bytes:
    """Java's ``String.compareTo`` order (UTF-16 code units)."""
    return s.encode("utf-16-be")


def _per_member(tasks: int, members: int) -> int:
    return 0 if members == 0 else -(-tasks // members)


class _Process:
    """Kafka's ProcessState: a process's members, their task counts and the tasks it holds."""

    def __init__(self, process_id: str) -> None:
        self.process_id = process_id
        self.members: list[str] = []  # in insertion order (the HashMap's order is derived from it)
        self.counts: dict[str, int] = {}
        self.task_count = 0
        self.tasks: set[Task] = set()
        self.active: dict[str, set[Task]] = {}
        self.standby: dict[str, set[Task]] = {}
        self._by_load: PriorityQueue[list] | None = None

    @property
    def load(self) -> float:
        return self.task_count / len(self.members)

    def add_member(self, member: str) -> None:
        self.members.append(member)
        self.counts[member] = 0

    def add_task(self, member: str, task: Task, active: bool) -> int:
        """A task to a chosen member: the members' load order is rebuilt on the next least-loaded pick."""
        self._by_load = None
        return self._add(member, task, active)

    def _add(self, member: str, task: Task, active: bool) -> int:
        self.task_count += 1
        self.tasks.add(task)
        (self.active if active else self.standby).setdefault(member, set()).add(task)
        self.counts[member] += 1
        return self.counts[member]

    def add_to_least_loaded(self, task: Task, active: bool) -> int:
        """A task to the member with the fewest tasks (the head of Kafka's PriorityQueue of members)."""
        if len(self.members) == 1:
            return self._add(self.members[0], task, active)
        if self._by_load is None:
            self._by_load = PriorityQueue(lambda a, b: a[1] - b[1])
            for m in hash_map_order(self.members):  # Kafka's HashMap of member task counts
                self._by_load.offer([m, self.counts[m]])
        entry = self._by_load.poll()
        assert entry is not None
        entry[1] = self._add(entry[0], task, active)
        self._by_load.offer(entry)
        return entry[1]


class _State:
    """Kafka's LocalState: the quotas, the processes, and who held each task before."""

    def __init__(self, members: Mapping[str, str], member_ids: list[str], total_active: int, total: int) -> None:
        self.member_process = members
        self.total_active, self.total = total_active, total
        self.active_capacity = self.total_capacity = len(member_ids)
        self.active_per_member = _per_member(total_active, len(member_ids))
        self.total_per_member = _per_member(total, len(member_ids))
        self.processes: dict[str, _Process] = {}
        for m in member_ids:
            self.processes.setdefault(members[m], _Process(members[m])).add_member(m)
        self.process_order = [self.processes[p] for p in hash_map_order(  # Kafka's computeIfAbsent of each
            self.processes, len(member_ids), compute_if_absent=True)]
        self.prev_active: dict[Task, str] = {}
        self.prev_standby: dict[Task, list[str]] = {}

    def process_of(self, member: str) -> _Process:
        return self.processes[self.member_process[member]]

    def count(self, member: str) -> int:
        return self.process_of(member).counts[member]

    def added_active(self, count: int) -> None:
        if count == self.active_per_member:
            self.active_capacity -= 1
            self.total_active -= count
            self.active_per_member = _per_member(self.total_active, self.active_capacity)
        self.added(count)

    def added(self, count: int) -> None:
        if count == self.total_per_member:
            self.total_capacity -= 1
            self.total -= count
            self.total_per_member = _per_member(self.total, self.total_capacity)

    def by_load(self) -> PriorityQueue[_Process]:
        queue: PriorityQueue[_Process] = PriorityQueue(lambda a, b: _compare(a.load, b.load))
        for p in self.process_order:
            queue.offer(p)
        return queue

    def least_loaded_holder(self, holders: list[str] | None, skip: Task | None = None) -> str | None:
        """The first of ``holders`` (ranked) such that no later one has both a less loaded process and fewer
        tasks; those whose process holds ``skip`` are passed over."""
        best: str | None = None
        best_process = best_member = 0.0
        for m in holders or ():
            p = self.process_of(m)
            if skip is not None and skip in p.tasks:
                continue
            load, count = p.load, p.counts[m]
            if best is not None and not (load < best_process and count < best_member):
                continue
            best, best_process, best_member = m, load, count
        return best


def _rank_state_holders(member_ids: list[str], current: Mapping[str, TasksTuple],
                        offsets: Mapping[str, Mapping[Task, int]]) -> dict[Task, list[str]]:
    """Per task, the members holding its state: current standbys first, then by reported offset, largest
    first (ties in member order)."""
    candidates: dict[Task, list[tuple[int, int, str]]] = {}
    for m in member_ids:
        mine = offsets.get(m, {})
        standby = {(s, p) for s, parts in current[m].standby for p in parts} if m in current else set()
        for t in standby:
            candidates.setdefault(t, []).append((0, -mine.get(t, 0), m))
        for t, offset in mine.items():
            if t not in standby:
                candidates.setdefault(t, []).append((1, -offset, m))
    return {t: [m for _, _, m in sorted(c, key=lambda x: x[:2])] for t, c in candidates.items()}


def _assign_active(state: _State, tasks: list[Task]) -> None:
    tasks = sorted(tasks, key=lambda t: (t[1], _utf16(t[0])))
    left = []
    for t in tasks:  # to its current owner
        m = state.prev_active.get(t)
        if m is not None and state.count(m) < state.active_per_member:
            state.added_active(state.process_of(m).add_task(m, t, True))
        else:
            left.append(t)
    rest = []
    for t in left:  # to a member holding its state
        m = state.least_loaded_holder(state.prev_standby.get(t))
        if m is not None and state.count(m) < state.active_per_member:
            state.added_active(state.process_of(m).add_task(m, t, True))
        else:
            rest.append(t)
    queue = state.by_load()
    for t in sorted(rest, key=lambda t: (_utf16(t[0]), t[1])):
        p = queue.poll()
        assert p is not None
        state.added_active(p.add_to_least_loaded(t, True))
        queue.offer(p)


def _standby_to_least_loaded(state: _State, queue: PriorityQueue[_Process], task: Task) -> bool:
    """Kafka's assignStandbyToMemberWithLeastLoad: the least loaded process without a copy of ``task``."""
    p = queue.poll()
    if p is None:
        return False
    found = False
    if task not in p.tasks:
        state.added(p.add_to_least_loaded(task, False))
        found = True
    elif len(queue):
        found = _standby_to_least_loaded(state, queue, task)
    queue.offer(p)
    return found


def _assign_standby(state: _State, tasks: list[Task], replicas: int) -> None:
    to_least_loaded: list[tuple[Task, int]] = []
    for t in sorted(tasks, key=lambda t: (t[1], _utf16(t[0])), reverse=True):
        for i in range(replicas):
            m = state.prev_active.get(t)
            if m is not None and t not in state.process_of(m).tasks and state.count(m) < state.total_per_member:
                state.added(state.process_of(m).add_task(m, t, False))
                continue
            m = state.least_loaded_holder(state.prev_standby.get(t), skip=t)
            if m is not None and state.count(m) < state.total_per_member:
                state.added(state.process_of(m).add_task(m, t, False))
                continue
            to_least_loaded.append((t, replicas - i))
            break
    to_least_loaded.sort(key=lambda x: (_utf16(x[0][0]), x[0][1]), reverse=True)
    queue = state.by_load()
    for t, remaining in to_least_loaded:
        for _ in range(remaining):
            if not _standby_to_least_loaded(state, queue, t):
                break  # not enough processes for this many copies (Kafka logs it)


def assign(members: Mapping[str, str], tasks: Mapping[str, int], current: Mapping[str, TasksTuple],
           num_standby_replicas: int = 0, stateful: Collection[str] | None = None,
           reported_offsets: Mapping[str, Mapping[Task, int]] | None = None) -> dict[str, TasksTuple]:
    """``members``: member id -> process id, in the order the group holds them; ``tasks``: sub-topology ->
    number of tasks; ``current``: each member's current assignment (the tasks it owns now, not its target);
    ``stateful``: the sub-topologies whose tasks get standby copies (None: all); ``reported_offsets``: member id
    -> the changelog offset it reported for each task it has state of."""
    if not members:
        return {}
    member_ids = hash_map_order(members)  # Kafka's HashMap of members
    active_tasks = [(s, p) for s, n in tasks.items() for p in range(n)]
    stateful_tasks = [t for t in active_tasks if stateful is None or t[0] in stateful]
    state = _State(members, member_ids, len(active_tasks), len(active_tasks) + len(stateful_tasks) * num_standby_replicas)
    for m in member_ids:
        for s, parts in current[m].active if m in current else ():
            for p in parts:
                state.prev_active[(s, p)] = m
    state.prev_standby = _rank_state_holders(member_ids, current, reported_offsets or {})
    _assign_active(state, active_tasks)
    if num_standby_replicas > 0:
        _assign_standby(state, stateful_tasks, num_standby_replicas)

    out: dict[str, TasksTuple] = {}
    for m in members:
        process = state.process_of(m)
        out[m] = TasksTuple.of(active=_grouped(process.active.get(m, set())),
                               standby=_grouped(process.standby.get(m, set())))
    return out


def _grouped(tasks: set[Task]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for s, p in tasks:
        out.setdefault(s, []).append(p)
    return out
