"""``python -m chaos``: one or more campaigns (``make chaos ARGS="--duration 120 --seed 7"``)."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from chaos.campaign import run
from chaos.nemesis import KINDS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos", description="pykbroker's fault campaign")
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of faults per campaign (600)")
    parser.add_argument("--seed", type=int, action="append", help="seed (repeat for several campaigns)")
    parser.add_argument("--faults", default=",".join(KINDS), help=f"comma-separated mix of {', '.join(KINDS)}")
    parser.add_argument("--rate", type=float, default=100.0, help="records/s of each acks=all producer")
    parser.add_argument("--brokers", type=int, default=3, help="brokers in the cluster (3; topics keep RF 3)")
    parser.add_argument("--target", choices=("pykbroker", "kafka"), default="pykbroker",
                        help="the cluster under test: pykbroker on ZooKeeper, or Apache Kafka 4.1 (KRaft) to compare")
    parser.add_argument("--hold", type=_pair, default=None, metavar="MIN,MAX",
                        help="hold every fault MIN-MAX seconds instead of its kind's hold (many short faults)")
    parser.add_argument("--gap", type=_pair, default=(1.0, 3.0), metavar="MIN,MAX",
                        help="seconds between a healthy cluster and the next fault (1,3)")
    parser.add_argument("--no-java", action="store_true", help="without the Java client's VerifiableProducer")
    parser.add_argument("--out", type=Path, default=Path("chaos-runs"), help="where runs are written")
    parser.add_argument("--in-process", type=Path, default=None, help=argparse.SUPPRESS)  # one campaign, here
    args = parser.parse_args(argv)
    faults = [f for f in args.faults.split(",") if f]
    unknown = sorted(set(faults) - set(KINDS))
    if unknown:
        parser.error(f"unknown fault kinds {unknown}; known: {', '.join(KINDS)}")
    if args.target == "kafka":
        from chaos.kafka_target import KAFKA_KINDS
        faults = [f for f in faults if f in KAFKA_KINDS]
    seeds = args.seed or [int(time.time()) % 100_000]
    if args.in_process is not None:
        outcome = run(args.duration, seeds[0], faults, args.in_process, rate=args.rate,
                      log=lambda s: print(s, flush=True), java=not args.no_java, brokers=args.brokers,
                      target=args.target, hold=args.hold, gap=args.gap)
        return 0 if outcome.ok else 1
    failed = 0
    for seed in seeds:
        out = args.out / f"seed-{seed}-{time.strftime('%Y%m%dT%H%M%S')}"
        print(f"campaign seed {seed}, {args.duration:.0f}s, faults {faults}, output {out}", flush=True)
        failed += run_isolated(sys.argv[1:] if argv is None else argv, seed, out) != 0
        print(f"reproduce: make chaos ARGS=\"--duration {args.duration:g} --seed {seed} --faults {','.join(faults)} "
              f"--rate {args.rate:g} --brokers {args.brokers} --target {args.target}{' --no-java' if args.no_java else ''}"
              f"{f' --hold {args.hold[0]:g},{args.hold[1]:g}' if args.hold else ''} --gap {args.gap[0]:g},{args.gap[1]:g}\"",
              flush=True)
    return 1 if failed else 0


def run_isolated(argv: list[str], seed: int, out: Path) -> int:
    """One campaign in a process group of its own (the cluster, proxies' clients, workloads are its
    children), so that whatever way it ends (a client library aborting it, Ctrl-C) nothing it started
    outlives it: the group is killed and the mounts it made under ``out`` are unmounted."""
    without_seeds = [a for i, a in enumerate(argv) if a != "--seed" and (i == 0 or argv[i - 1] != "--seed")]
    proc = subprocess.Popen([sys.executable, "-m", "chaos", *without_seeds, "--seed", str(seed),
                             "--in-process", str(out)], start_new_session=True)
    try:
        returncode = proc.wait()
    except KeyboardInterrupt:
        os.killpg(proc.pid, signal.SIGINT)
        returncode = proc.wait()
    finally:
        leftovers = reap(proc.pid, out)
    if returncode not in (0, 1) or leftovers:
        print(f"campaign seed {seed} ended with exit code {returncode}; killed {leftovers} leftover processes "
              f"and unmounted its mounts under {out}", flush=True)
    return returncode


def reap(group: int, out: Path) -> int:
    """Kill what is left of process group ``group`` (waiting up to 10 s for it to be gone), unmount every mount
    under ``out``; returns how many processes were left."""
    left = []
    for pid in group_members(group):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "multiprocessing.resource_tracker" not in command:  # ends by itself once its parent has gone
            left.append(pid)
            print(f"left behind by the campaign, killed: pid {pid}: {command[:300]}", flush=True)
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        pass
    # a killed process lives on until the kernel has torn it down (a moment on a loaded machine): wait for that,
    # so that its open files no longer hold the mounts below and a caller finds the group gone
    deadline = time.monotonic() + 10
    while group_members(group) and time.monotonic() < deadline:
        time.sleep(0.02)
    root = str(out.resolve())
    mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    for mount in sorted((m for m in mounts if m.startswith(root + "/")), key=len, reverse=True):
        subprocess.run(["umount", "-l", mount], capture_output=True)
    return len(left)


def group_members(group: int) -> list[int]:
    """The live processes (zombies aside) of process group ``group``."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, _ppid, pgrp = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if int(pgrp) == group and state != "Z":
            members.append(int(stat.parent.name))
    return members


def _pair(text: str) -> tuple[float, float]:
    low, high = (float(x) for x in text.split(","))
    if not 0 <= low <= high:
        raise argparse.ArgumentTypeError(f"{text!r}: want MIN,MAX with 0 <= MIN <= MAX")
    return low, high


if __name__ == "__main__":
    sys.exit(main())
