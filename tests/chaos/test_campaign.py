"""A short fixed-seed campaign on a real 3-broker cluster (ZooKeeper, stock librdkafka and Java clients, every
link through the fault-injecting proxy): faults drawn from every kind of the nemesis (disk-full only as
root: it mounts a tmpfs per broker; disk-readonly left to `make chaos`: every broker's I/O would go through
a FUSE filesystem written in Python), then every check of the checker must pass: 20 s of faults in ``make test``,
a minute in ``make test-chaos-slow`` (PYKBROKER_CHAOS_SLOW=1). ``make chaos`` runs the long ones. A failed run is copied to ``chaos-runs/test-campaign-<time>/`` (history, logs, copier log),
since pytest's temporary directories do not outlive a busy machine's next runs."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from chaos.campaign import run
from chaos.nemesis import KINDS

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper needs java")

SEED = 20261124
slow = pytest.mark.skipif(os.environ.get("PYKBROKER_CHAOS_SLOW") != "1",
                          reason="a minute of faults: make test-chaos-slow (PYKBROKER_CHAOS_SLOW=1)")


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("seconds", "seed", "faults"), [
    pytest.param(20.0, SEED, 2, id="20s"),
    pytest.param(60.0, SEED, 3, id="60s", marks=slow)])
def test_a_short_campaign_keeps_every_promise(tmp_path, seconds, seed, faults):
    lines: list[str] = []
    kinds = [k for k in KINDS if (k != "disk-full" or os.geteuid() == 0) and k != "disk-readonly"]
    outcome = run(seconds, seed, kinds, tmp_path / "run", rate=60.0, log=lines.append)
    verdict = "\n".join(lines)
    if not outcome.ok:
        kept = Path(__file__).resolve().parents[2] / "chaos-runs" / f"test-campaign-{time.strftime('%Y%m%dT%H%M%S')}"
        shutil.copytree(tmp_path / "run", kept, ignore=shutil.ignore_patterns("*.log.*", "*.index", "*.timeindex"))
        verdict += f"\nrun kept in {kept}"
    assert outcome.ok, verdict
    h = outcome.history
    assert len(h.faults) >= faults, verdict
    assert sum(1 for p in h.produced if p.ok and not p.txn) > 1000, verdict
    assert h.copiers and len(h.copiers[0].inputs) > 100, verdict
    assert any(p.txn == "aborted" for p in h.produced) and any(p.txn == "committed" for p in h.produced), verdict
    assert (tmp_path / "run" / "history.json").stat().st_size > 0
    assert "<svg" in (tmp_path / "run" / "timeline.html").read_text()
