"""A tiny run of the Streams assignment bench so the harness does not rot (no timing asserted): two instances of
the application on one pykbroker node, with each protocol. JVMs: PYKBROKER_STREAMS_SLOW=1 (`make test-streams-slow`)."""

import os

import pytest

from bench import streams_assignment_bench

pytestmark = pytest.mark.skipif(os.environ.get("PYKBROKER_STREAMS_SLOW") != "1",
                                reason="JVMs: PYKBROKER_STREAMS_SLOW=1 (make test-streams-slow)")


def test_smoke_run_measures_both_protocols(tmp_path, capsys):
    figures = streams_assignment_bench.main(["pykbroker"], ["single"], instances=2, repeat=1, results_dir=tmp_path)
    assert set(figures.runs) == {("single", "classic", "pykbroker"), ("single", "streams", "pykbroker")}
    assert all(0 < a.from_last_start <= a.from_first_start for runs in figures.runs.values() for a in runs)
    assert list(tmp_path.glob("streams-assignment-*.json")), "results JSON written"
    assert "to a stable assignment" in capsys.readouterr().out
