"""franz-go's own kgo integration tests (``pkg/kgo`` of the version pinned in go.mod) against a fresh pykbroker, one
node or a 3-broker cluster, or against Apache Kafka 4.4 (the judge) set up the same way.

The suite runs against any broker named in ``KGO_SEEDS``; ``KGO_TEST_RF`` sets the replication factor of its topics,
``KGO_TEST_RECORDS`` the records of its ETL chains, and ``KGO_TEST_SCRAM_SEEDS``/``KGO_TEST_SCRAM`` a SASL_PLAINTEXT
listener and a SCRAM-SHA-256 user for its SCRAM tests (a pykbroker run gives each broker such a listener). The test
binary is built once per franz-go version by ``build_kgo_suite.sh``.

    python -m compat_tests.franz.kgo_suite cluster                 # pykbroker, 3 brokers, the whole suite
    python -m compat_tests.franz.kgo_suite single -run 'TestTxnEtl$' --kafka --log-level debug
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from compat_tests.go_test_run import SuiteRun, run_go_tests

if TYPE_CHECKING:
    from compat_tests.jvm.kafka_broker import KafkaBroker

HERE = Path(__file__).parent
RECORDS = 20_000  # KGO_TEST_RECORDS: franz-go's own default is 500,000, too many for a 2-core machine
SCRAM_USER, SCRAM_PASSWORD = "kgo", "kgo-scram-secret"
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
OVERRIDES = {"group.initial.rebalance.delay.ms": "0"}


def kgo_test_binary() -> tuple[Path, Path] | None:
    """(test binary, directory it runs in), built now if missing; None on a machine without Go."""
    try:
        out = subprocess.run(["bash", str(HERE / "build_kgo_suite.sh")], capture_output=True, text=True,
                             timeout=1800, check=True).stdout.split()
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"compat_tests/franz/build_kgo_suite.sh failed:\n{exc.stderr[-3000:]}") from None
    return (Path(out[0]), Path(out[1])) if out else None


def run_suite(binary: Path, workdir: Path, seeds: str, *, replication: int, pattern: str = ".",
              scram_seeds: str | None = None, records: int = RECORDS, log_level: str = "none",
              timeout_s: int = 3600, output: Path | None = None, extra_args: tuple[str, ...] = ()) -> SuiteRun:
    """Run the kgo tests matching ``pattern`` against ``seeds``; the output is also written to ``output``."""
    env = {**os.environ, "KGO_SEEDS": seeds, "KGO_TEST_RF": str(replication), "KGO_TEST_RECORDS": str(records),
           "KGO_LOG_LEVEL": log_level}
    if scram_seeds:
        env.update(KGO_TEST_SCRAM_SEEDS=scram_seeds, KGO_TEST_SCRAM=f"{SCRAM_USER}:{SCRAM_PASSWORD}:256")
    return run_go_tests(binary, workdir, env, pattern=pattern, timeout_s=timeout_s, output=output,
                        extra_args=extra_args)


def _sasl_overrides() -> dict[str, str]:
    return {"sasl.enabled.mechanisms": "SCRAM-SHA-256", "inter.broker.listener.name": "PLAINTEXT",
            "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS}


def _add_scram_user(bootstrap: str) -> None:
    from pykbroker.security.client import salted_password
    from pykbroker.testing import RawClient
    from wire import ErrorCode
    from wire.messages import AlterUserScramCredentialsRequest
    from wire.messages.alter_user_scram_credentials_request import ScramCredentialUpsertion

    salt, iterations = b"kgo-salt", 4096
    upsert = ScramCredentialUpsertion(name=SCRAM_USER, mechanism=1, iterations=iterations, salt=salt,
                                      salted_password=salted_password("SCRAM-SHA-256", SCRAM_PASSWORD, salt,
                                                                      iterations))
    with RawClient(bootstrap) as c:
        result = c.request(AlterUserScramCredentialsRequest(deletions=[], upsertions=[upsert]), 0)
    assert result.results[0].error_code == ErrorCode.NONE, result.results[0].error_message


@contextmanager
def pykbroker_brokers(root: Path, size: int) -> Iterator[tuple[str, str]]:
    """(seeds, SCRAM seeds) of a fresh pykbroker: one node (size 1) or a ZooKeeper cluster of ``size`` brokers, each
    with a PLAINTEXT listener and a SASL_PLAINTEXT one taking SCRAM-SHA-256."""
    from pykbroker.testing import BrokerProcess, ClusterProcesses, free_port

    def listeners(port: int) -> dict[str, str]:
        sasl = free_port()
        sasl_ports.append(sasl)
        return {"listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl}"}

    sasl_ports: list[int] = []
    if size == 1:
        port = free_port()
        with BrokerProcess(root / "broker", {**OVERRIDES, **_sasl_overrides(), **listeners(port)}, port=port) as b:
            b.start()
            _add_scram_user(b.bootstrap)
            yield b.bootstrap, f"127.0.0.1:{sasl_ports[0]}"
        return
    with ClusterProcesses(root, size=0, overrides={**OVERRIDES, **_sasl_overrides()}) as cluster:
        for node_id in range(1, size + 1):
            port = free_port()
            cluster.add_broker(node_id, listeners(port), port=port)
        cluster.wait_for_brokers(size)
        _add_scram_user(cluster.broker(1).bootstrap)
        yield cluster.bootstrap, ",".join(f"127.0.0.1:{p}" for p in sasl_ports)


def add_sasl_listeners(nodes: list[KafkaBroker]) -> list[str]:
    """Give each Kafka node (not started yet) a SASL_PLAINTEXT listener beside its PLAINTEXT one; their addresses."""
    from pykbroker.testing import free_port

    sasl_seeds = []
    for node in nodes:
        sasl = free_port()
        sasl_seeds.append(f"127.0.0.1:{sasl}")
        node.overrides.update({
            "listeners": f"PLAINTEXT://127.0.0.1:{node.port},SASL_PLAINTEXT://127.0.0.1:{sasl},"
                         f"CONTROLLER://127.0.0.1:{node.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port},SASL_PLAINTEXT://127.0.0.1:{sasl}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,"
                                              "CONTROLLER:PLAINTEXT"})
    return sasl_seeds


@contextmanager
def kafka_brokers(root: Path, size: int) -> Iterator[tuple[str, str]]:
    """(seeds, SCRAM seeds) of a fresh Apache Kafka 4.4 of ``size`` nodes (the judge), set up as ``pykbroker_brokers``:
    a PLAINTEXT and a SASL_PLAINTEXT (SCRAM-SHA-256) listener on each node."""
    from compat_tests.jvm.kafka_broker import KafkaBroker, KafkaCluster, jars_dir

    jars = jars_dir()
    if jars is None:
        raise RuntimeError("java or Maven is missing: Kafka 4.4 cannot run here")
    kafka = KafkaBroker(jars, root=root, overrides=OVERRIDES) if size == 1 \
        else KafkaCluster(jars, root, overrides=OVERRIDES)
    nodes = [kafka] if isinstance(kafka, KafkaBroker) else kafka.nodes
    for node in nodes:
        node.overrides.update(_sasl_overrides())
    sasl_seeds = add_sasl_listeners(nodes)
    kafka.start()
    try:
        _add_scram_user(nodes[0].bootstrap)
        yield ",".join(n.bootstrap for n in nodes), ",".join(sasl_seeds)
    finally:
        kafka.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["single", "cluster"])
    ap.add_argument("-run", default=".", help="go test -run pattern (default: every test)")
    ap.add_argument("--kafka", action="store_true", help="run against Apache Kafka 4.4 instead of pykbroker")
    ap.add_argument("--records", type=int, default=RECORDS, help="KGO_TEST_RECORDS")
    ap.add_argument("--log-level", default="none", help="KGO_LOG_LEVEL: none, info or debug")
    ap.add_argument("--output", type=Path, help="where to keep the whole go test output")
    ap.add_argument("-count", type=int, default=1, help="go test -count: run each test this many times")
    ap.add_argument("--keep", action="store_true", help="keep the brokers' data and logs (their directory is printed)")
    args = ap.parse_args(argv)
    built = kgo_test_binary()
    if built is None:
        print("go is not installed: nothing to run", file=sys.stderr)
        return 0
    size = 1 if args.mode == "single" else 3
    root = Path(tempfile.mkdtemp(prefix=f"kgo-{'kafka' if args.kafka else 'pykbroker'}-{args.mode}-"))
    print("brokers under", root, flush=True)
    brokers = kafka_brokers if args.kafka else pykbroker_brokers
    with brokers(root, size) as (seeds, scram_seeds):
        run = run_suite(*built, seeds, replication=size, pattern=args.run, scram_seeds=scram_seeds,
                        records=args.records, log_level=args.log_level, output=args.output,
                        extra_args=("-test.count", str(args.count)))
    top = {name: status for name, status in run.results.items() if "/" not in name}  # subtests aside
    for name, status in sorted(run.results.items()):
        if status != "PASS":
            print(status, name)
    print(f"{sum(s == 'PASS' for s in top.values())} tests passed, {sum(s == 'FAIL' for s in top.values())} "
          f"failed, {sum(s == 'SKIP' for s in top.values())} skipped ({len(run.results)} with subtests) in "
          f"{run.seconds:.0f} s (go test exit {run.returncode})")
    if not args.keep:
        import shutil
        shutil.rmtree(root, ignore_errors=True)
    return 1 if run.returncode else 0


if __name__ == "__main__":
    sys.exit(main())
