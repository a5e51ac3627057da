"""Run librdkafka's test suite against a broker this starts, or one already running:

    python -m compat_tests.rdkafka_suite --target pykbroker --tests 0001,0012
    python -m compat_tests.rdkafka_suite --target kafka-cluster            # the chosen set on 3 Kafka 4.4 nodes
    python -m compat_tests.rdkafka_suite --bootstrap 127.0.0.1:9092 --tests 0030

Targets: kafka (Kafka 4.4, one KRaft node), kafka-cluster (three), pykbroker (one node), pykbroker-cluster (three
brokers and ZooKeeper), all with the suite's default scenario. Prints each test's outcome; exits 1 when one failed.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from compat_tests.jvm.kafka_broker import jars_dir
from compat_tests.rdkafka_suite import (
    CLUSTER,
    SCENARIOS,
    SINGLE,
    broker_settings,
    chosen,
    run_suite,
    runner_path,
    runner_scenario,
    verdict,
)
from compat_tests.rdkafka_suite.kafka_path import kafka_path

TARGETS = ("kafka", "kafka-cluster", "pykbroker", "pykbroker-cluster")


@contextlib.contextmanager
def started(target: str, root: Path, scenario: str) -> Iterator[str]:
    """Start ``target`` under ``root`` with ``scenario``'s settings; yields its bootstrap, stops it after."""
    settings = broker_settings(scenario, target.endswith("cluster"))
    if target == "pykbroker":
        from pykbroker.testing import BrokerProcess
        with BrokerProcess(root / "broker", overrides=settings, log_path=root / "broker.log") as broker:
            yield broker.bootstrap
    elif target == "pykbroker-cluster":
        from pykbroker.testing import ClusterProcesses
        with ClusterProcesses(root, size=3, overrides=settings) as cluster:
            yield cluster.bootstrap
    else:
        from compat_tests.jvm.kafka_broker import started_kafka_44
        with started_kafka_44(root, target == "kafka-cluster", settings) as bootstrap:
            yield bootstrap


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", choices=TARGETS, default="pykbroker")
    parser.add_argument("--bootstrap", help="run against this running broker instead of starting a target")
    parser.add_argument("--tests", help="comma-separated test numbers (default: the chosen set for the target)")
    parser.add_argument("--workdir", type=Path, help="where test.conf, the runner's log and the brokers' go")
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--group-protocol", choices=("classic", "consumer"),
                        help="the consumers' group.protocol (TEST_CONSUMER_GROUP_PROTOCOL; the runner's default: classic)")
    parser.add_argument("--full", action="store_true", help="the runner's full mode (default: quick, -Q)")
    parser.add_argument("--scenario", choices=SCENARIOS, default="default",
                        help="the broker settings (default, noautocreate: no auto-created topics, the runner runs only "
                             "that scenario's tests; acl: ACLs in force, no super user)")
    parser.add_argument("--no-kafka-path", action="store_true",
                        help="no KAFKA_PATH (the tests needing Kafka's scripts then skip or fail)")
    parser.add_argument("--debug", help="librdkafka debug contexts (TEST_DEBUG), e.g. protocol,cgrp")
    args = parser.parse_args()
    runner = runner_path()
    if runner is None:
        print("no C compiler: librdkafka's test suite cannot be built", file=sys.stderr)
        return 0
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="rdkafka-suite-"))
    workdir.mkdir(parents=True, exist_ok=True)
    env = {"TEST_DEBUG": args.debug} if args.debug else {}
    if args.group_protocol:
        env["TEST_CONSUMER_GROUP_PROTOCOL"] = args.group_protocol
    tests = args.tests or chosen(CLUSTER if args.target.endswith("cluster") else SINGLE, not args.full)
    jars = None if args.no_kafka_path else jars_dir()
    with contextlib.ExitStack() as stack:
        bootstrap = args.bootstrap or stack.enter_context(started(args.target, workdir, args.scenario))
        outcomes, log = run_suite(runner, bootstrap, tests, workdir / "run", parallel=args.parallel, env=env,
                                  quick=not args.full, scenario=runner_scenario(args.scenario),
                                  kafka_path=kafka_path(jars) if jars else None)
    ran = [o for o in outcomes.values() if o.name[:4] in tests.split(",") and o.state != "SKIPPED"]
    for outcome in ran:
        print(f"{outcome.name:45} {outcome.state:8} {outcome.seconds:8.1f}s {outcome.reason}")
    failed, not_passed = verdict(outcomes, tests)
    passed = sum(o.state == "PASSED" for o in ran)
    print(f"{args.bootstrap or args.target} ({'full' if args.full else 'quick'}, {args.scenario}): {passed} passed, {len(failed)} failed; numbers without a passed test: "
          f"{','.join(not_passed) or 'none'}; log: {log}")
    return 1 if failed or not_passed else 0


if __name__ == "__main__":
    sys.exit(main())
