"""confluent-kafka-go's own integration tests (the ``kafka`` package of the version pinned in build_go_suite.sh, with
its testconf.json) against a fresh pykbroker, one node or a 3-broker cluster, or against Apache Kafka 4.4 (the judge)
set up the same way, with the classic or the consumer (KIP-848) group protocol.

The suite's own broker (its testresources/kraft/server.properties) is mirrored: a PLAINTEXT listener and a
SASL_PLAINTEXT one taking PLAIN for ``admin`` and ``testuser`` (the authorized-operations tests), the
StandardAuthorizer allowing what no ACL covers, 4 partitions for auto-created topics. TEST_CONSUMER_GROUP_PROTOCOL
picks the group protocol, as in its CI. The test binary is built once by ``build_go_suite.sh``.

    python -m compat_tests.confluent_suites.go_suite single                  # pykbroker, one node, classic
    python -m compat_tests.confluent_suites.go_suite cluster --protocol consumer --kafka
    python -m compat_tests.confluent_suites.go_suite single -run 'TestIntegration/TestAdminACLs$'
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from compat_tests.go_test_run import SuiteRun, run_go_tests

HERE = Path(__file__).parent
PROTOCOLS = ("classic", "consumer")
SASL_USER, SASL_PASSWORD = "testuser", "testpass"
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin" '
              f'user_admin="admin" user_{SASL_USER}="{SASL_PASSWORD}";')
# The suite's server.properties, as far as a client sees it (Kafka's controllers vote as User:ANONYMOUS over
# PLAINTEXT here, so it is a super user as well as the suite's admin).
OVERRIDES = {"auto.create.topics.enable": "true", "num.partitions": "4", "group.initial.rebalance.delay.ms": "0",
             "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
             "allow.everyone.if.no.acl.found": "true", "super.users": "User:admin;User:ANONYMOUS",
             "sasl.enabled.mechanisms": "PLAIN", "inter.broker.listener.name": "PLAINTEXT",
             "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS}


def go_test_binary() -> Path | None:
    """The test binary, built now if missing; None on a machine without Go."""
    try:
        out = subprocess.run(["bash", str(HERE / "build_go_suite.sh")], capture_output=True, text=True,
                             timeout=3600, check=True).stdout.split()
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"compat_tests/confluent_suites/build_go_suite.sh failed:\n{exc.stderr[-3000:]}") from None
    return Path(out[0]) if out else None


def write_testconf(workdir: Path, seeds: str, sasl_seeds: str) -> None:
    """The suite's testconf.json (read from the directory it runs in) naming the brokers under test."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "testconf.json").write_text(json.dumps({
        "Brokers": seeds, "BrokersSasl": sasl_seeds, "SaslUsername": SASL_USER, "SaslPassword": SASL_PASSWORD,
        "SaslMechanism": "PLAIN", "TopicName": "test", "GroupID": "testgroup", "PerfMsgCount": 10000,
        "PerfMsgSize": 100, "Config": ["api.version.request=true"]}, indent=1))


def run_suite(binary: Path, workdir: Path, seeds: str, sasl_seeds: str, *, protocol: str, pattern: str = ".",
              timeout_s: int = 900, output: Path | None = None, extra_args: tuple[str, ...] = ()) -> SuiteRun:
    """Run the tests matching ``pattern`` against ``seeds`` with group protocol ``protocol`` from ``workdir``; the
    output is also written to ``output``."""
    write_testconf(workdir, seeds, sasl_seeds)
    env = {**os.environ, "TEST_CONSUMER_GROUP_PROTOCOL": protocol}
    return run_go_tests(binary, workdir, env, pattern=pattern, timeout_s=timeout_s, output=output,
                        extra_args=extra_args)


@contextmanager
def pykbroker_brokers(root: Path, size: int) -> Iterator[tuple[str, str]]:
    """(seeds, SASL seeds) of a fresh pykbroker: one node (size 1) or a ZooKeeper cluster of ``size`` brokers, each
    with a PLAINTEXT listener and a SASL_PLAINTEXT one taking PLAIN."""
    from pykbroker.testing import BrokerProcess, ClusterProcesses, free_port

    def listeners(port: int) -> dict[str, str]:
        sasl = free_port()
        sasl_seeds.append(f"127.0.0.1:{sasl}")
        return {"listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl}",
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl}"}

    sasl_seeds: list[str] = []
    if size == 1:
        port = free_port()
        with BrokerProcess(root / "broker", {**OVERRIDES, **listeners(port)}, port=port,
                           log_path=root / "broker.log") as b:
            b.start()
            yield b.bootstrap, sasl_seeds[0]
        return
    with ClusterProcesses(root, size=0, overrides={**OVERRIDES, "offsets.topic.replication.factor": "3"}) as cluster:
        for node_id in range(1, size + 1):
            port = free_port()
            cluster.add_broker(node_id, listeners(port), port=port)
        cluster.wait_for_brokers(size)
        yield cluster.bootstrap, ",".join(sasl_seeds)


@contextmanager
def kafka_brokers(root: Path, size: int) -> Iterator[tuple[str, str]]:
    """(seeds, SASL seeds) of a fresh Apache Kafka 4.4 of ``size`` nodes (the judge), set up as ``pykbroker_brokers``."""
    from compat_tests.franz.kgo_suite import add_sasl_listeners
    from compat_tests.jvm.kafka_broker import KafkaBroker, KafkaCluster, jars_dir

    jars = jars_dir()
    if jars is None:
        raise RuntimeError("java or Maven is missing: Kafka 4.4 cannot run here")
    kafka = KafkaBroker(jars, root=root, overrides=OVERRIDES) if size == 1 \
        else KafkaCluster(jars, root, overrides=OVERRIDES)
    nodes = [kafka] if isinstance(kafka, KafkaBroker) else kafka.nodes
    sasl_seeds = add_sasl_listeners(nodes)
    kafka.start()
    try:
        yield ",".join(n.bootstrap for n in nodes), ",".join(sasl_seeds)
    finally:
        kafka.close()


def summary(run: SuiteRun) -> str:
    """Tests passed, failed and skipped (subtests of TestIntegration counted, the suite itself not)."""
    counted = {name: s for name, s in run.results.items() if name != "TestIntegration"}
    return (f"{sum(s == 'PASS' for s in counted.values())} passed, {sum(s == 'FAIL' for s in counted.values())} "
            f"failed, {sum(s == 'SKIP' for s in counted.values())} skipped in {run.seconds:.0f} s "
            f"(go test exit {run.returncode})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["single", "cluster"])
    ap.add_argument("--protocol", choices=[*PROTOCOLS, "both"], default="both", help="group.protocol of the run")
    ap.add_argument("-run", default=".", help="go test -run pattern (default: every test)")
    ap.add_argument("--kafka", action="store_true", help="run against Apache Kafka 4.4 instead of pykbroker")
    ap.add_argument("--output", type=Path, help="where to keep the whole go test output (one file per protocol)")
    ap.add_argument("-count", type=int, default=1, help="go test -count: run each test this many times")
    ap.add_argument("--keep", action="store_true", help="keep the brokers' data and logs (their directory is printed)")
    args = ap.parse_args(argv)
    binary = go_test_binary()
    if binary is None:
        print("go is not installed: nothing to run", file=sys.stderr)
        return 0
    size = 1 if args.mode == "single" else 3
    root = Path(tempfile.mkdtemp(prefix=f"cfgo-{'kafka' if args.kafka else 'pykbroker'}-{args.mode}-"))
    print("brokers under", root, flush=True)
    brokers = kafka_brokers if args.kafka else pykbroker_brokers
    failed = False
    for protocol in PROTOCOLS if args.protocol == "both" else (args.protocol,):
        # Fresh brokers for each protocol: the suite's groups (testgroup, rebalance) are named the same every run.
        with brokers(root / f"brokers-{protocol}", size) as (seeds, sasl_seeds):
            output = args.output.with_suffix(f".{protocol}.log") if args.output else None
            run = run_suite(binary, root / f"run-{protocol}", seeds, sasl_seeds, protocol=protocol,
                            pattern=args.run, output=output, extra_args=("-test.count", str(args.count)))
        for name, status in sorted(run.results.items()):
            if status != "PASS":
                print(protocol, status, name)
        print(f"{protocol}: {summary(run)}", flush=True)
        failed |= run.returncode != 0
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
