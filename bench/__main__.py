"""Run every benchmark module ``bench/*_bench.py`` (or the ones named) and print their reports.

    python -m bench                 # all
    python -m bench storage         # bench/storage_bench.py only
    python -m bench streams-assignment   # bench/streams_assignment_bench.py (a dash stands for an underscore)
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = argv or sorted(p.stem.removesuffix("_bench") for p in here.glob("*_bench.py"))
    if not names:
        print("no benchmarks found in bench/")
        return 1
    for name in names:
        module = importlib.import_module(f"bench.{name.replace('-', '_')}_bench")
        print(f"== {name} ==", flush=True)
        started = time.monotonic()
        module.main()
        print(f"== {name}: {time.monotonic() - started:.1f} s ==", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
