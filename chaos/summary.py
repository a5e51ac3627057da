"""Totals over several runs' histories: ``python -m chaos.summary chaos-runs/*/history.json``."""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

from chaos.checker import check_all, unavailability
from chaos.history import History


def main(paths: list[str]) -> int:
    faults: dict[str, list[float]] = defaultdict(list)
    checked = violations = explained = 0
    for path in paths:
        h = History.from_json(Path(path).read_text())
        results = check_all(h)
        checked += sum(r.checked for r in results)
        violations += sum(len(r.violations) for r in results)
        explained += sum(len(r.explained) for r in results)
        for kind, gaps in unavailability(h).items():
            faults[kind] += gaps
        print(f"{path}: seed {h.meta.get('seed')}, {len(h.faults)} faults, "
              f"{sum(1 for p in h.produced if p.ok)} acknowledged writes, "
              f"{sum(len(r.violations) for r in results)} violations, {sum(len(r.explained) for r in results)} explained")
    print(f"\n{len(paths)} runs, {sum(len(g) for g in faults.values())} faults, {checked} checks, {violations} violations, "
          f"{explained} explained (not the broker's; see each verdict's EXPLAINED lines)")
    print(f"{'fault':<20} {'count':>5} {'no-ack p50 s':>13} {'no-ack max s':>13}")
    for kind, gaps in sorted(faults.items()):
        print(f"{kind:<20} {len(gaps):>5} {statistics.median(gaps):>13.2f} {max(gaps):>13.2f}")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
