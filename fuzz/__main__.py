"""Run the fuzz targets with atheris (libFuzzer, coverage-guided).

    python -m fuzz                          # every target, 60 s each
    python -m fuzz requests --seconds 600   # one target
    python -m fuzz all --runs 1000 --seed 1 # a fixed number of inputs, reproducible
    python -m fuzz dispatch frames --jobs 2 # several targets, two at a time (make test's run: dispatch first)

Each target runs in its own process, seeded from fuzz/corpus (see fuzz.targets.TARGETS) and
fuzz/regressions/<target>; new interesting inputs go to a scratch folder, crashes to fuzz/crashes/.
The summary line per target gives the inputs executed and whether it crashed. A crash found becomes a
file in fuzz/regressions/<target>/ (replayed by tests/fuzz/test_targets.py) and a fix.

Targets (fuzz.targets): frames, request_header, requests (every served API and version), record_batches,
decompressors, sasl_authenticator, sasl_tokens, and dispatch (whole frames through a real in-process
broker's handlers, fuzz.dispatch_target). Live-socket fuzzing of a running broker is fuzz.live.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
# libFuzzer stops an input after this many seconds (a hang) and the process above this resident size.
TIMEOUT_S = 10
RSS_LIMIT_MB = 1024
# Inputs longer than this are not generated: every target's interesting structure fits (a frame of the
# frames target, a request, a batch); longer ones only slow each run.
MAX_LEN = 65536


def run_one(target: str, seconds: float | None, runs: int | None, seed: int | None) -> tuple[int, int, float]:
    """Fuzz one target in a child process; (exit code, inputs executed, seconds)."""
    from fuzz.targets import TARGETS

    seeds = [str(HERE / "corpus" / d) for d in TARGETS[target][1]]
    regressions = HERE / "regressions" / target
    if regressions.is_dir():
        seeds.append(str(regressions))
    crashes = HERE / "crashes"
    crashes.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"fuzz-{target}-") as scratch:
        args = [sys.executable, "-m", "fuzz", "--child", target, f"-timeout={TIMEOUT_S}",
                f"-rss_limit_mb={RSS_LIMIT_MB}", f"-max_len={MAX_LEN}", f"-artifact_prefix={crashes}/{target}-",
                "-print_final_stats=1"]
        if seconds is not None:
            args.append(f"-max_total_time={int(seconds)}")
        if runs is not None:
            args.append(f"-runs={runs}")
        if seed is not None:
            args.append(f"-seed={seed}")
        started = time.monotonic()
        done = subprocess.run([*args, scratch, *seeds], capture_output=True, text=True)
        elapsed = time.monotonic() - started
    out = done.stdout + done.stderr
    m = re.search(r"stat::number_of_executed_units:\s*(\d+)", out)
    executed = int(m.group(1)) if m else 0
    if done.returncode != 0:
        sys.stderr.write(out[-6000:])
    return done.returncode, executed, elapsed


def child(target: str, libfuzzer_args: list[str]) -> None:
    """In the child: instrument our packages, then hand the target to atheris (never returns)."""
    import atheris

    with atheris.instrument_imports(include=["wire", "pykbroker", "storage", "replication", "coordinator"]):
        from fuzz.targets import SERVED, TARGETS
        from wire import REQUESTS

        if target in ("requests", "dispatch"):  # any served request: its class loads on first use, so load them
            for api_key in SERVED:  # all here, instrumented (the other targets' code came with fuzz.targets)
                REQUESTS[api_key]
        if target == "dispatch":
            import fuzz.dispatch_target  # noqa: F401
            from pykbroker.registry import REGISTRY
            REGISTRY.load_all()  # every handler, instrumented
    fn = TARGETS[target][0]
    atheris.Setup([sys.argv[0], *libfuzzer_args], lambda data: fn(bytes(data)))
    atheris.Fuzz()


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        child(argv[1], argv[2:])
        return 0
    from fuzz.targets import TARGETS

    parser = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("target", nargs="*", default=["all"], choices=["all", *TARGETS])
    parser.add_argument("--seconds", type=float, help="time per target (default 60, unless --runs)")
    parser.add_argument("--runs", type=int, help="inputs per target")
    parser.add_argument("--seed", type=int, help="libFuzzer's random seed (a fixed seed makes a run repeatable)")
    parser.add_argument("--jobs", type=int, default=1, help="targets fuzzed at once, each in its own process (1)")
    args = parser.parse_args(argv)
    seconds = args.seconds if args.seconds is not None or args.runs is not None else 60.0
    names = list(TARGETS) if "all" in args.target else list(dict.fromkeys(args.target))
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = pool.map(lambda name: run_one(name, seconds, args.runs, args.seed), names)
        for name, (rc, executed, elapsed) in zip(names, results, strict=True):  # in order, each once done
            verdict = "ok" if rc == 0 else f"CRASH (exit {rc}; input in fuzz/crashes/)"
            print(f"{name:20s} {executed:>10,d} inputs in {elapsed:6.1f} s  {verdict}", flush=True)
            failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main(sys.argv[1:]))
