"""A short fixed-seed campaign on a real 3-broker cluster (ZooKeeper, stock librdkafka clients): every
fault kind of the nemesis once or more, then every check of the checker must pass. ``make chaos`` runs
the long ones."""

from __future__ import annotations

import shutil

import pytest

from chaos.campaign import run
from chaos.nemesis import KINDS

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper needs java")

SEED = 20261124


@pytest.mark.timeout(600)
def test_a_short_campaign_keeps_every_promise(tmp_path):
    lines: list[str] = []
    outcome = run(60.0, SEED, list(KINDS), tmp_path / "run", rate=60.0, log=lines.append)
    verdict = "\n".join(lines)
    assert outcome.ok, verdict
    h = outcome.history
    assert len(h.faults) >= 3, verdict
    assert sum(1 for p in h.produced if p.ok and not p.txn) > 1000, verdict
    assert h.copiers and len(h.copiers[0].inputs) > 100, verdict
    assert any(p.txn == "aborted" for p in h.produced) and any(p.txn == "committed" for p in h.produced), verdict
    assert (tmp_path / "run" / "history.json").stat().st_size > 0
    assert "<svg" in (tmp_path / "run" / "timeline.html").read_text()
