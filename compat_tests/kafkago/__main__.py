"""Run kafka-go's own tests against a broker this starts, in a network namespace of its own:

    python -m compat_tests.kafkago --target kafka              # Kafka 4.4, one KRaft node: the judge
    python -m compat_tests.kafkago --target pykbroker-cluster  # three pykbroker brokers and ZooKeeper
    python -m compat_tests.kafkago --target pykbroker --run 'kafka-go=^TestClientCreateTopics$' --all

By default the tests that fail on Kafka 4.4 too are skipped (compat_tests/kafkago/expected.py); ``--all`` runs
every test. Prints each test that did not pass and the counts; exits 1 when one failed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from compat_tests.kafkago import TARGETS, netns_available, run_in_netns, run_isolated, suite_binaries


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--in-netns":
        run_in_netns(Path(sys.argv[2]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", choices=TARGETS, default="pykbroker")
    parser.add_argument("--run", action="append", default=[],
                        help="package=pattern: run only these tests (-test.run) of that package (repeatable)")
    parser.add_argument("--all", action="store_true", help="also the tests that fail on Kafka 4.4")
    parser.add_argument("--count", type=int, default=1, help="go test -count")
    parser.add_argument("--workdir", type=Path, help="where the brokers, the output and the results go")
    args = parser.parse_args()
    if suite_binaries() is None:
        print("go is not installed: nothing to run", file=sys.stderr)
        return 0
    why = netns_available()
    if why:
        print(f"no network namespace: {why}", file=sys.stderr)
        return 2
    from compat_tests.kafkago.expected import skips
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix=f"kafkago-{args.target}-"))
    run = dict(r.split("=", 1) for r in args.run) or None
    suite = run_isolated(args.target, workdir, skip=None if args.all else skips(args.target), run=run,
                         count=args.count)
    top = {name: status for name, status in suite.results.items() if "/" not in name}
    for name, status in sorted(suite.results.items()):
        if status != "PASS":
            print(status, name)
    print(f"{sum(s == 'PASS' for s in top.values())} tests passed, {sum(s == 'FAIL' for s in top.values())} failed, "
          f"{sum(s == 'SKIP' for s in top.values())} skipped ({len(suite.results)} with subtests) in "
          f"{suite.seconds:.0f} s; output in {workdir / 'suite.log'}")
    return 1 if suite.failed else 0


if __name__ == "__main__":
    sys.exit(main())
