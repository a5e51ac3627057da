"""``python -m compat_tests.sarama [--kafka] [-run PATTERN]``: sarama's functional tests against a fresh 5-broker
pykbroker (or Apache Kafka 4.4 with ``--kafka``); prints every test that did not pass and the counts."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from compat_tests.sarama import kafka_environment, pykbroker_environment, run_suite, sarama_test_binary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-run", help="go test -run pattern (default: every functional test)")
    ap.add_argument("--kafka", action="store_true", help="run against Apache Kafka 4.4 instead of pykbroker")
    ap.add_argument("--output", type=Path, help="where to keep the whole go test output")
    ap.add_argument("-count", type=int, default=1, help="go test -count: run each test this many times")
    ap.add_argument("--keep", action="store_true", help="keep the brokers' data and logs (their directory is printed)")
    args = ap.parse_args(argv)
    built = sarama_test_binary()
    if built is None:
        print("go is not installed: nothing to run", file=sys.stderr)
        return 0
    binary, workdir, server = built
    root = Path(tempfile.mkdtemp(prefix=f"sarama-{'kafka' if args.kafka else 'pykbroker'}-"))
    print("brokers under", root, flush=True)
    environment = kafka_environment if args.kafka else pykbroker_environment
    with environment(root, server) as env:
        run = run_suite(binary, workdir, env, pattern=args.run, output=args.output,
                        extra_args=("-test.count", str(args.count)))
    for name, status in sorted(run.results.items()):
        if status != "PASS":
            print(status, name)
    passed, failed, skipped = run.counts()
    print(f"{passed} tests passed, {failed} failed, {skipped} skipped ({len(run.results)} with subtests) in "
          f"{run.seconds:.0f} s (go test exit {run.returncode})")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if run.returncode else 0


if __name__ == "__main__":
    sys.exit(main())
