"""Run kafka-python's own integration suite against a broker this starts, or one already running:

    python -m compat_tests.python_suites --target pykbroker
    python -m compat_tests.python_suites --target kafka -k test_kafka_consumer    # Kafka 4.4, chosen tests
    python -m compat_tests.python_suites --bootstrap 127.0.0.1:9092

Targets: kafka (Kafka 4.4, one KRaft node), kafka-cluster (three), pykbroker (one node), pykbroker-cluster (three
brokers and ZooKeeper), all with the suite's broker settings. Prints each test's outcome; exits 1 when one failed.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from compat_tests.python_suites import (
    CLUSTER_SCENARIO,
    NODE_ID,
    SCENARIO,
    fetch_sdist,
    prepare,
    pykbroker_cluster,
    pykbroker_settings,
    run_suite,
    tally,
)

TARGETS = ("kafka", "kafka-cluster", "pykbroker", "pykbroker-cluster")


@contextlib.contextmanager
def started(target: str, root: Path) -> Iterator[str]:
    """Start ``target`` under ``root``; yields its bootstrap, stops it after."""
    if target == "pykbroker":
        from pykbroker.testing import BrokerProcess, free_port
        port = free_port()
        with BrokerProcess(root / "broker", overrides=pykbroker_settings(port), port=port,
                           log_path=root / "broker.log") as broker:
            yield broker.bootstrap
    elif target == "pykbroker-cluster":
        cluster = pykbroker_cluster(root / "cluster")
        try:
            yield cluster.bootstrap
        finally:
            cluster.close()
    elif target == "kafka":
        from compat_tests.jvm.kafka_broker import started_kafka_44
        with started_kafka_44(root, False, SCENARIO, node_id=NODE_ID) as bootstrap:
            yield bootstrap
    else:
        from compat_tests.jvm.kafka_broker import started_kafka_44
        with started_kafka_44(root, True, CLUSTER_SCENARIO) as bootstrap:
            yield bootstrap


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", choices=TARGETS, default="pykbroker")
    parser.add_argument("--bootstrap", help="run against this running broker instead of starting a target")
    parser.add_argument("-k", dest="select", help="pytest's -k expression: which tests")
    parser.add_argument("--workdir", type=Path, help="where the suite's copy, its report and the brokers go")
    args = parser.parse_args()
    sdist = fetch_sdist()
    if sdist is None:
        print("PyPI cannot be reached and the sdist is not cached", file=sys.stderr)
        return 0
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="python-suites-"))
    root = prepare(sdist, workdir / "suite")
    with contextlib.ExitStack() as stack:
        bootstrap = args.bootstrap or stack.enter_context(started(args.target, workdir))
        found, log = run_suite(root, bootstrap, workdir, args.select)
    for outcome in found.values():
        print(f"{outcome.name:90} {outcome.state:8} {outcome.seconds:7.1f}s {outcome.reason}")
    print(f"{args.bootstrap or args.target}: {tally(found)}; pytest's output: {log}")
    return 1 if any(o.state in ("failed", "error") for o in found.values()) or not found else 0


if __name__ == "__main__":
    sys.exit(main())
