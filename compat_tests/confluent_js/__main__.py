"""Run @confluentinc/kafka-javascript's own broker tests against a broker this starts, or one already running:

    python -m compat_tests.confluent_js --target kafka                 # Kafka 4.4, one KRaft node: the judge
    python -m compat_tests.confluent_js --target pykbroker-cluster     # three pykbroker brokers and ZooKeeper
    python -m compat_tests.confluent_js --target pykbroker --only promisified -k test/promisified/admin/
    python -m compat_tests.confluent_js --target kafka-cluster --only promisified --protocol consumer \
        -k consumeMessages -t diffConcurrencyPartitions
    python -m compat_tests.confluent_js --bootstrap 127.0.0.1:9092 --protocol consumer

Targets: kafka (Kafka 4.4, one KRaft node), kafka-cluster (three), pykbroker (one node), pykbroker-cluster (three
brokers and ZooKeeper), all with the suite's broker settings. Prints each test that did not pass (with -t, each
that failed) and the counts; writes every outcome to the workdir's outcomes.json; exits 1 when one failed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from compat_tests.confluent_js import (
    CLUSTER_SCENARIO,
    E2E_CLUSTER_SCENARIO,
    E2E_SCENARIO,
    SCENARIO,
    TARGETS,
    run_e2e,
    run_promisified,
    suite_dir,
    tally,
)


@contextlib.contextmanager
def started(target: str, root: Path, e2e: bool = False) -> Iterator[str]:
    """Start ``target`` under ``root`` with the promisified tests' settings (``e2e``: e2e's); yields its bootstrap,
    stops it after."""
    single, many = (E2E_SCENARIO, E2E_CLUSTER_SCENARIO) if e2e else (SCENARIO, CLUSTER_SCENARIO)
    if target == "pykbroker":
        from pykbroker.testing import BrokerProcess
        with BrokerProcess(root / "broker", overrides=single, log_path=root / "broker.log") as broker:
            broker.start()
            yield broker.bootstrap
    elif target == "pykbroker-cluster":
        from pykbroker.testing import ClusterProcesses
        with ClusterProcesses(root / "cluster", size=3, overrides=many) as cluster:
            yield cluster.bootstrap
    else:
        from compat_tests.jvm.kafka_broker import started_kafka_44
        on_cluster = target == "kafka-cluster"
        with started_kafka_44(root, on_cluster, many if on_cluster else single) as bootstrap:
            yield bootstrap


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", choices=TARGETS, default="pykbroker")
    parser.add_argument("--bootstrap", help="run against this running broker instead of starting a target")
    parser.add_argument("--only", choices=("promisified", "e2e"), help="one half of the suite")
    parser.add_argument("--protocol", choices=("classic", "consumer"), help="the promisified tests' group protocol")
    parser.add_argument("-k", dest="select", help="jest: a substring of the spec files' paths; mocha: a --grep")
    parser.add_argument("-t", dest="name", help="jest: a regular expression of the tests' full names "
                                                "(--testNamePattern), e.g. -t diffConcurrencyPartitions")
    parser.add_argument("--workdir", type=Path, help="where the brokers, the output and the results go")
    args = parser.parse_args()
    suite = suite_dir()
    if suite is None:
        print("confluent-kafka-javascript's suite cannot be built here (see compat_tests/confluent_js/install.sh)",
              file=sys.stderr)
        return 0
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix=f"confluent-js-{args.target}-"))
    workdir.mkdir(parents=True, exist_ok=True)
    found = {}
    if args.only != "e2e":
        with contextlib.ExitStack() as stack:
            bootstrap = args.bootstrap or stack.enter_context(started(args.target, workdir / "promisified"))
            part, log = run_promisified(suite, bootstrap, workdir, args.protocol, args.select, args.name)
            print(f"promisified: {tally(part)}; jest's output: {log}")
            found.update(part)
    if args.only != "promisified":
        with contextlib.ExitStack() as stack:
            bootstrap = args.bootstrap or stack.enter_context(started(args.target, workdir / "e2e", e2e=True))
            part, log = run_e2e(suite, bootstrap, workdir, args.select)
            print(f"e2e: {tally(part)}; mocha's output: {log}")
            found.update(part)
    for outcome in found.values():
        if outcome.state == "failed" or outcome.state != "passed" and not args.name:
            print(f"{outcome.state:8} {outcome.name} {outcome.reason}")
    (workdir / "outcomes.json").write_text(json.dumps({k: [o.state, o.reason] for k, o in found.items()}, indent=1))
    print(f"{args.bootstrap or args.target}: {tally(found)}; outcomes in {workdir / 'outcomes.json'}")
    return 1 if any(o.state == "failed" for o in found.values()) or not found else 0


if __name__ == "__main__":
    sys.exit(main())
