"""Spark over pykbroker's Iceberg tables: a SparkSession whose catalog ``pykbroker`` is the broker's.

Spark's Iceberg ``JdbcCatalog`` opens the SQLite catalog the broker's pyiceberg writes (the same
``iceberg_tables`` rows; the Spark catalog must be named ``pykbroker``, the name every row carries), so
``spark.table("pykbroker.kafka.orders")`` reads the committed records of topic ``orders``.

No Iceberg release has a Spark 4.2 runtime yet, so this runs Spark 4.1.4 (installed by
``compat_tests/jvm/spark/fetch_jars.sh`` beside the jars), not the [test] extra's pyspark 4.2.0: in its own
process. ``sql(data_dir, query)`` runs a query there and returns the rows;
``python -m pykbroker.iceberg.spark --data-dir DIR "SELECT ..."`` (or ``--catalog-uri``/``--warehouse``)
prints them as JSON lines. Inside a process whose pyspark is 4.1 (``PYTHONPATH=<pyspark_dir()>``),
``spark_session(...)`` gives the session itself.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pykbroker.iceberg.tables import CATALOG_NAME

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["catalog_conf", "iceberg_jars", "main", "pyspark_dir", "spark_session", "sql"]

_CACHE = Path(__file__).resolve().parents[2] / "compat_tests" / "jvm" / "spark" / ".cache"
#: Set to a folder holding Iceberg's Spark runtime and the SQLite JDBC driver to use them instead of the cache.
JARS_ENV = "PYKBROKER_ICEBERG_JARS"
#: Set to a folder holding pyspark 4.1 (a pip --target install) instead of the cache's.
PYSPARK_ENV = "PYKBROKER_ICEBERG_PYSPARK"
SPARK_VERSION = "4.1"


def iceberg_jars() -> list[Path]:
    folder = Path(os.environ.get(JARS_ENV) or _CACHE / "iceberg-jars")
    jars = sorted(folder.glob("*.jar"))
    if not any(j.name.startswith("iceberg-spark-runtime-") for j in jars):
        raise FileNotFoundError(f"Iceberg's Spark runtime is not in {folder}; run compat_tests/jvm/spark/fetch_jars.sh "
                                f"(make deps), or set {JARS_ENV} to a folder holding it and sqlite-jdbc")
    return jars


def pyspark_dir() -> Path:
    folder = Path(os.environ.get(PYSPARK_ENV) or _CACHE / "pyspark-4.1.4")
    if not (folder / "pyspark").is_dir():
        raise FileNotFoundError(f"pyspark {SPARK_VERSION} is not in {folder}; run compat_tests/jvm/spark/fetch_jars.sh "
                                f"(make deps), or set {PYSPARK_ENV} to a pip --target folder holding it")
    return folder


def catalog_conf(catalog_uri: str, warehouse: str) -> dict[str, str]:
    """Spark settings for the catalog ``pykbroker`` over the broker's SQL catalog (pyiceberg's SQLAlchemy URL)."""
    if catalog_uri.startswith("sqlite:///"):
        jdbc = "jdbc:sqlite:" + catalog_uri[len("sqlite://"):]
    elif catalog_uri.startswith("http://") or catalog_uri.startswith("https://"):
        return {f"spark.sql.catalog.{CATALOG_NAME}": "org.apache.iceberg.spark.SparkCatalog",
                f"spark.sql.catalog.{CATALOG_NAME}.type": "rest",
                f"spark.sql.catalog.{CATALOG_NAME}.uri": catalog_uri,
                **({f"spark.sql.catalog.{CATALOG_NAME}.warehouse": warehouse} if warehouse else {})}
    else:
        raise ValueError(f"no JDBC URL for catalog {catalog_uri!r}: give a sqlite:/// or http(s):// catalog URI")
    prefix = f"spark.sql.catalog.{CATALOG_NAME}"
    return {prefix: "org.apache.iceberg.spark.SparkCatalog",
            f"{prefix}.catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
            f"{prefix}.uri": jdbc,
            # V0: pyiceberg's table layout, left as it is (V1 would add a column to the broker's catalog)
            f"{prefix}.jdbc.schema-version": "V0",
            f"{prefix}.warehouse": warehouse}


def _default_locations(data_dir: str | Path) -> tuple[str, str]:
    root = Path(data_dir).resolve() / "iceberg"
    return f"sqlite:///{root}/catalog.db", f"file://{root}/warehouse"


def spark_session(catalog_uri: str, warehouse: str, *, master: str = "local[2]", driver_memory: str = "512m",
                  conf: Mapping[str, str] | None = None, quick_start: bool = False) -> SparkSession:
    """A small local SparkSession with the catalog ``pykbroker``; needs pyspark 4.1 (see the module docstring).

    ``quick_start``: for a JVM that runs a query or two, C1-compiled code only and the serial collector (about
    half the start-up time on a busy machine, slower on long jobs)."""
    import pyspark
    from pyspark.sql import SparkSession

    if not pyspark.__version__.startswith(SPARK_VERSION + "."):
        raise RuntimeError(f"pyspark {pyspark.__version__} is imported, but Iceberg's runtime needs Spark "
                           f"{SPARK_VERSION}: run with PYTHONPATH={pyspark_dir()} or use pykbroker.iceberg.spark.sql")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (SparkSession.builder.master(master).appName("pykbroker-iceberg")
               # on the driver's class path rather than spark.jars: nothing to copy or serve (local mode only)
               .config("spark.driver.extraClassPath", os.pathsep.join(str(j) for j in iceberg_jars()))

               .config("spark.driver.memory", driver_memory)
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.warehouse.dir", str(Path(tempfile.gettempdir()) / "pykbroker-spark-warehouse"))
               .config("spark.sql.session.timeZone", "UTC"))
    if quick_start:
        builder = builder.config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
    for key, value in {**catalog_conf(catalog_uri, warehouse), **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return {"base64": base64.b64encode(value).decode()}
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if hasattr(value, "asDict"):
        return _jsonable(value.asDict(recursive=True))
    return value


def _unjson(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"base64"}:
            return base64.b64decode(value["base64"])
        return {k: _unjson(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unjson(v) for v in value]
    return value


def sql(queries: list[str], *, data_dir: str | Path | None = None, catalog_uri: str | None = None,
        warehouse: str | None = None, timeout: float = 300) -> list[list[dict[str, Any]]]:
    """The rows of each query, run by Spark 4.1 in a process of its own (binary columns come back as bytes,
    timestamps as ISO strings). The catalog is the broker's default under ``data_dir`` (its first log dir)
    unless ``catalog_uri``/``warehouse`` say otherwise."""
    if data_dir is not None:
        catalog_uri, warehouse = _default_locations(data_dir)
    if not catalog_uri or warehouse is None:
        raise ValueError("give data_dir, or catalog_uri and warehouse")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(pyspark_dir()), str(Path(__file__).resolve().parents[2]),
                                         env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-m", "pykbroker.iceberg.spark", "--catalog-uri", catalog_uri,
                           "--warehouse", warehouse, *queries], env=env, capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"Spark failed ({done.returncode}):\n{done.stderr[-4000:]}")
    results: list[list[dict[str, Any]]] = [[] for _ in queries]
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            item = json.loads(line)
            results[item["query"]].append(_unjson(item["row"]))
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pykbroker.iceberg.spark",
                                 description="Run Spark SQL over pykbroker's Iceberg tables; one JSON line per row.")
    ap.add_argument("queries", nargs="+", help='e.g. "SELECT count(*) FROM pykbroker.kafka.orders"')
    ap.add_argument("--data-dir", help="the broker's first log dir (its default SQLite catalog and warehouse)")
    ap.add_argument("--catalog-uri", help="the broker's iceberg.catalog.uri (sqlite:///... or http(s)://...)")
    ap.add_argument("--warehouse", default="", help="the broker's iceberg.warehouse")
    args = ap.parse_args(argv)
    catalog_uri, warehouse = (_default_locations(args.data_dir) if args.data_dir
                              else (args.catalog_uri, args.warehouse))
    if not catalog_uri:
        ap.error("give --data-dir or --catalog-uri")
    try:
        import pyspark

        if not pyspark.__version__.startswith(SPARK_VERSION + "."):
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(pyspark_dir()), os.environ.get("PYTHONPATH", "")]))
            return subprocess.call([sys.executable, "-m", "pykbroker.iceberg.spark", *(argv or sys.argv[1:])],
                                   env=env)
        spark = spark_session(catalog_uri, warehouse, quick_start=True)
    except (FileNotFoundError, RuntimeError, ValueError) as exc:
        print(f"pykbroker.iceberg.spark: {exc}", file=sys.stderr)
        return 2
    try:
        for i, query in enumerate(args.queries):
            for row in spark.sql(query).collect():
                print(json.dumps({"query": i, "row": _jsonable(row.asDict(recursive=True))}), flush=True)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
