"""Command line: ``pykbroker [server.properties] [--override key=value ...]``, as kafka-server-start.sh.

``pykbroker spark-load ...`` is the offline load of topics to Parquet with Spark (``pykbroker.spark``).
``pykbroker local-cluster ...`` runs ZooKeeper and N brokers on this machine (``make cluster``).
"""

from __future__ import annotations

import argparse
import logging
import sys

from pykbroker.config import Config, ConfigError


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
    return ap


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
        print(Config.help_text())
        return 0
    logging.basicConfig(
        level=args.log_level,
        format="[%(asctime)s] %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        config = Config.load(args.properties, args.override)
    except ConfigError as exc:
        print(f"pykbroker: configuration error: {exc}", file=sys.stderr)
        return 2
    from pykbroker.server import run

    try:
        run(config)
    except ConfigError as exc:  # found at start: listener security (key stores, JAAS)
        print(f"pykbroker: configuration error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"pykbroker: cannot start: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
