#!/usr/bin/env bash
# Copy Spark's Kafka connector jars (see pom.xml) into compat_tests/jvm/spark/.cache/jars, once; and what Spark
# needs to read pykbroker's Iceberg tables (see iceberg/pom.xml): Iceberg's Spark runtime and the SQLite JDBC
# driver into .cache/iceberg-jars, pyspark 4.1.4 (the newest Spark an Iceberg runtime supports) into
# .cache/pyspark-4.1.4.
# Usage: compat_tests/jvm/spark/fetch_jars.sh   (prints the jar directory; a no-op when the cache is there)
# pykbroker.spark finds the jars there (or in $PYKBROKER_SPARK_JARS) and passes them to Spark as spark.jars;
# pykbroker.iceberg.spark finds the Iceberg ones and that pyspark there.
# $PY: the Python whose pip installs pyspark 4.1.4 (default: the checkout's .venv, else python3).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"

# fetch POM DIR STAMP: the pom's runtime jars into DIR, unless STAMP holds the pom's hash already.
fetch() {
    local pom="$1" dir="$2" stamp="$3" want
    want="$(sha256sum "$pom" | cut -d' ' -f1)"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -n "$(ls -A "$dir" 2>/dev/null)" ]]; then
        return 0
    fi
    command -v mvn >/dev/null || { echo "spark/fetch_jars.sh: mvn (Maven 3.8+) is required" >&2; exit 1; }
    rm -rf "$dir"
    mkdir -p "$dir"
    mvn -q -B -f "$pom" dependency:copy-dependencies -DoutputDirectory="$dir" -DincludeScope=runtime >&2
    echo "$want" > "$stamp"
}

# The stamps hold the poms' hashes: editing a pom (a new Spark or Iceberg version) refreshes its cache.
fetch "$here/pom.xml" "$here/.cache/jars" "$here/.cache/jars.stamp"
fetch "$here/iceberg/pom.xml" "$here/.cache/iceberg-jars" "$here/.cache/iceberg-jars.stamp"

pyspark_dir="$here/.cache/pyspark-4.1.4"
if [[ ! -f "$pyspark_dir/.installed" ]]; then
    py="${PY:-}"
    [[ -n "$py" ]] || { [[ -x "$root/.venv/bin/python" ]] && py="$root/.venv/bin/python"; } || py=python3
    rm -rf "$pyspark_dir"
    "$py" -m pip install --quiet --no-deps --target "$pyspark_dir" pyspark==4.1.4 py4j==0.10.9.9 >&2
    touch "$pyspark_dir/.installed"
fi
echo "$here/.cache/jars"
