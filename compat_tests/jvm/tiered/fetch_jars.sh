#!/usr/bin/env bash
# Copy Apache Kafka 4.4 and its test-only LocalTieredStorage (see pom.xml) into compat_tests/jvm/tiered/.cache/jars,
# once (prints the directory; a no-op when the cache matches the pom).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
jars="$(bash "$here/../../../tools/maven_jars.sh" "$here")"
extra="$jars/zz-kafka-clients-4.3.1-logcontext.jar"
if [[ -s "$extra" ]]; then
    echo "$jars"
    exit 0
fi
# 4.3.1's LocalTieredStorage logs through org.apache.kafka.common.utils.LogContext, which 4.4 moved to
# ...utils.internals: those few classes of kafka-clients 4.3.1 go on the classpath beside 4.4's.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mvn -q -B dependency:copy -Dartifact=org.apache.kafka:kafka-clients:4.3.1 -DoutputDirectory="$tmp" >&2
python3 - "$tmp/kafka-clients-4.3.1.jar" "$extra.tmp" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as src, zipfile.ZipFile(sys.argv[2], "w") as out:
    for name in src.namelist():
        if name.startswith("org/apache/kafka/common/utils/LogContext"):
            out.writestr(name, src.read(name))
PY
mv "$extra.tmp" "$extra"
echo "$jars"
