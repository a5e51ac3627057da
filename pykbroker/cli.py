"""Command line: ``pykbroker [server.properties] [--override key=value ...]``, as kafka-server-start.sh.

``pykbroker spark-load ...`` is the offline load of topics to Parquet with Spark (``pykbroker.spark``).
``pykbroker local-cluster ...`` runs ZooKeeper and N brokers on this machine (``make cluster``).
``pykbroker --ephemeral`` is a broker for another program's tests: a temporary data dir deleted on exit, a
free port unless ``listeners`` is given, and one line on stdout once it serves:
``pykbroker ready bootstrap.servers=127.0.0.1:PORT``.
"""

from __future__ import annotations

import argparse
import gc
import logging
import shutil
import sys
import tempfile

from pykbroker.config import Config, ConfigError
from pykbroker.log_format import FORMAT, OneLineFormatter

# The first line an --ephemeral broker prints on stdout once it serves; the bootstrap address follows.
READY_PREFIX = "pykbroker ready bootstrap.servers="


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="pykbroker",
        description="A Kafka broker in Python. With no arguments: a single node on localhost:9092. "
                    "`pykbroker spark-load --help`: the offline load of topics to Parquet with Spark.",
    )
    ap.add_argument("properties", nargs="?", help="a Kafka server.properties file")
    ap.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                    help="set a property (repeatable), after the properties file")
    ap.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    ap.add_argument("--help-config", action="store_true", help="list every supported property and exit")
    ap.add_argument("--ephemeral", action="store_true",
                    help="for tests: a temporary data dir deleted on exit, a free port on 127.0.0.1 unless "
                         f"listeners is set, and the line '{READY_PREFIX}HOST:PORT' on stdout when ready")
    return ap


def ephemeral_overrides(config: Config, data_dir: str) -> list[str]:
    """What --ephemeral adds to the given properties: a data dir, a free port, a quick first group join."""
    extra = []
    if "log.dirs" not in config.explicit and "log.dir" not in config.explicit:
        extra.append(f"log.dirs={data_dir}")
    if "listeners" not in config.explicit:
        extra.append("listeners=PLAINTEXT://127.0.0.1:0")
    if "group.initial.rebalance.delay.ms" not in config.explicit:
        extra.append("group.initial.rebalance.delay.ms=0")
    return extra


def print_ready_line(server) -> None:
    """The --ephemeral ready line: the first listener's address, as bound."""
    listener = next(iter(server.broker.bound_listeners.values()))
    print(f"{READY_PREFIX}{listener.host or '127.0.0.1'}:{listener.port}", flush=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["spark-load"]:
        from pykbroker.spark import main as spark_load

        return spark_load(argv[1:])
    if argv[:1] == ["local-cluster"]:
        from pykbroker.local_cluster import main as local_cluster

        return local_cluster(argv[1:])
    args = build_parser().parse_args(argv)
    if args.help_config:
        from pykbroker.iceberg.config import help_text as iceberg_help

        print(Config.help_text())
        print(iceberg_help())
        return 0
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLineFormatter(FORMAT))
    logging.basicConfig(level=args.log_level, handlers=[handler])
    data_dir = None
    try:
        config = Config.load(args.properties, args.override)
        if args.ephemeral:
            data_dir = tempfile.mkdtemp(prefix="pykbroker-ephemeral-")
            config = Config.load(args.properties, [*args.override, *ephemeral_overrides(config, data_dir)])
    except ConfigError as exc:
        print(f"pykbroker: configuration error: {exc}", file=sys.stderr)
        if data_dir is not None:
            shutil.rmtree(data_dir, ignore_errors=True)
        return 2
    try:
        return _run(config, print_ready_line if args.ephemeral else None)
    finally:
        if data_dir is not None:
            shutil.rmtree(data_dir, ignore_errors=True)


def _run(config: Config, on_started) -> int:
    # Importing the broker makes ~20,000 tracked objects that live as long as the process (modules, classes,
    # functions) and almost no garbage (~50 collections found 350 objects): collecting meanwhile is wasted work (~3%
    # of a start). None during the imports; then what they made is frozen out of every later collection
    # (gc.freeze), so the next ones, at start and when serving, do not walk it all again.
    gc.disable()
    try:
        from pykbroker.server import run
    finally:
        gc.freeze()
        gc.enable()
    try:
        run(config, on_started)
    except ConfigError as exc:  # found at start: listener security (key stores, JAAS)
        print(f"pykbroker: configuration error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"pykbroker: cannot start: {exc}", file=sys.stderr)
        return 1
    return 0

if __name__ == "__main__":
    sys.exit(main())
