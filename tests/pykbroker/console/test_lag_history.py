"""``console.lag_history``: each group's total and per-partition lag over the last samples (the browser test
of its chart is in ``test_cluster_console.py``, ``make test-console-slow``)."""

from __future__ import annotations

from pykbroker.console.lag_history import LagHistory
from pykbroker.metrics.state import GroupView


def view(group_id: str, offsets: dict[tuple[str, int], tuple[int, int | None]]) -> GroupView:
    return GroupView(group_id, "classic", "Empty", "consumer", [], offsets)


def test_samples_keep_totals_and_partitions_with_gaps_as_none():
    history = LagHistory(samples=3)
    history.sample([view("g", {("t", 0): (5, 10)})], now=1.0)
    history.sample([view("g", {("t", 0): (8, 7), ("t", 1): (0, 4), ("u", 0): (0, None)})], now=2.0)
    history.sample([view("g", {("t", 1): (4, 0)}), view("h", {})], now=3.0)
    assert history.to_json("g") == {"times": [1.0, 2.0, 3.0], "lag": [10, 11, 0], "partitions": [
        ["t", 0, [10, 7, None]], ["t", 1, [None, 4, 0]], ["u", 0, [None, None, None]]]}
    assert history.to_json("h") == {"times": [3.0], "lag": [0], "partitions": []}
    history.sample([view("g", {("t", 1): (4, 2)})], now=4.0)  # the oldest sample goes; h is gone
    assert history.to_json("g")["lag"] == [11, 0, 2]  # type: ignore[index]
    assert history.to_json("h") is None and history.to_json("nope") is None
