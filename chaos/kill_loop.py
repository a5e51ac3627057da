"""Single node: ``kill -9`` of one broker, again and again, under idempotent acks=all load; afterwards every
acknowledged record must be read back once, at its offset, in each producer's order, and no high
watermark seen may go backwards.

    python -m chaos.kill_loop --cycles 1000 --seed 7          # make chaos-kill-loop ARGS="--cycles 1000"

Each cycle lets the broker run for 0.3-2 s (seeded) after its first acknowledged write since the restart,
then kills it and starts it again on the same port and data directory. The history and the verdict are
written to ``chaos-runs/kill-loop-<seed>-<time>/``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from chaos.campaign import Outcome, format_verdict
from chaos.checker import check_all
from chaos.history import Fault, History
from chaos.timeline import render
from chaos.workloads import ProducerWorkload, WatermarkSampler, read_back
from pykbroker.testing import BrokerProcess

PARTITIONS = 3
START_TIMEOUT = 180  # seconds; a loaded machine recovers the logs slowly


def acknowledged(history: History) -> int:
    return sum(1 for p in history.produced if p.ok)


def run(cycles: int, seed: int, out_dir: Path, rate: float = 100.0, log=print) -> Outcome:
    rng = random.Random(seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    clock = lambda: round(time.monotonic() - t0, 3)  # noqa: E731
    history = History(meta={"seed": seed, "cycles": cycles, "rate": rate, "kind": "single-node kill -9 loop"})
    errors: list[str] = []
    # 1 MiB segments: recovery after kill -9 scans only what follows the recovery point (the active segment),
    # as Kafka's, so a restart stays short however long the loop runs.
    broker = BrokerProcess(out_dir / "broker", {"log.segment.bytes": str(1 << 20)}, log_path=out_dir / "broker.log")
    with broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("acks", PARTITIONS, 1)])["acks"].result(30)
        producers = [ProducerWorkload(f"producer-{i}", history, clock, broker.bootstrap, "acks", PARTITIONS, rate)
                     for i in range(2)]
        sampler = WatermarkSampler("watermarks", history, clock, broker.bootstrap, {"acks": PARTITIONS})
        for w in [*producers, sampler]:
            w.start()
        try:
            for cycle in range(cycles):
                mark = acknowledged(history)
                deadline = time.monotonic() + 60
                while acknowledged(history) == mark and time.monotonic() < deadline:
                    time.sleep(0.05)
                if acknowledged(history) == mark:
                    errors.append(f"cycle {cycle}: no write acknowledged 60s after the restart")
                    break
                time.sleep(rng.uniform(0.3, 2.0))
                fault = Fault("kill-9", "broker", clock())
                history.add(fault)
                broker.kill()
                try:
                    broker.start(timeout=START_TIMEOUT)
                except RuntimeError:
                    errors.append(f"cycle {cycle}: the broker did not answer {START_TIMEOUT}s after its restart; "
                                  f"see {broker.log_path}")
                    broker.kill()
                    broker.start(timeout=START_TIMEOUT)  # once more, so what was acknowledged can be read back
                    break
                fault.end = clock()
                if (cycle + 1) % 50 == 0:
                    log(f"{clock():8.1f}s cycle {cycle + 1}/{cycles}: {acknowledged(history)} acknowledged writes")
        finally:
            for w in producers:
                w.stop()
            sampler.stop(60)
            errors += [e for w in [*producers, sampler] for e in w.errors]
        for p in range(PARTITIONS):
            read_back(broker.bootstrap, "acks", p, history, clock)
    results = check_all(history)
    outcome = Outcome(seed, history, results, errors, out_dir)
    (out_dir / "history.json").write_text(history.to_json())
    (out_dir / "timeline.html").write_text(render(history, f"pykbroker kill -9 loop seed {seed}"))
    verdict = format_verdict(outcome)
    (out_dir / "verdict.txt").write_text(verdict)
    log(verdict)
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos.kill_loop", description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--rate", type=float, default=100.0, help="records/s of each of the two producers")
    parser.add_argument("--out", type=Path, default=Path("chaos-runs"))
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else int(time.time()) % 100_000
    out = args.out / f"kill-loop-{seed}-{time.strftime('%Y%m%dT%H%M%S')}"
    print(f"kill loop seed {seed}, {args.cycles} cycles, output {out}", flush=True)
    outcome = run(args.cycles, seed, out, args.rate, log=lambda s: print(s, flush=True))
    print(f"reproduce: make chaos-kill-loop ARGS=\"--cycles {args.cycles} --seed {seed} --rate {args.rate:g}\"")
    return 0 if outcome.ok else 1


if __name__ == "__main__":
    sys.exit(main())
