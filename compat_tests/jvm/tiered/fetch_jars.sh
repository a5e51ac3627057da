#!/usr/bin/env bash
# Copy Apache Kafka 4.4 and its test-only LocalTieredStorage (see pom.xml) into compat_tests/jvm/tiered/.cache/jars,
# once (prints the directory; a no-op when the cache matches the pom).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
jars="$here/.cache/jars"
stamp="$here/.cache/jars.stamp"
want="$(sha256sum "$here/pom.xml" | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -n "$(ls -A "$jars" 2>/dev/null)" ]]; then
    echo "$jars"
    exit 0
fi
command -v mvn >/dev/null || { echo "fetch_jars.sh: mvn (Maven 3.8+) is required" >&2; exit 1; }
rm -rf "$jars"
mkdir -p "$jars"
mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies -DoutputDirectory="$jars" -DincludeScope=runtime >&2
# 4.3.1's LocalTieredStorage logs through org.apache.kafka.common.utils.LogContext, which 4.4 moved to
# ...utils.internals: those few classes of kafka-clients 4.3.1 go on the classpath beside 4.4's.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mvn -q -B dependency:copy -Dartifact=org.apache.kafka:kafka-clients:4.3.1 -DoutputDirectory="$tmp" >&2
python3 - "$tmp/kafka-clients-4.3.1.jar" "$jars/zz-kafka-clients-4.3.1-logcontext.jar" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as src, zipfile.ZipFile(sys.argv[2], "w") as out:
    for name in src.namelist():
        if name.startswith("org/apache/kafka/common/utils/LogContext"):
            out.writestr(name, src.read(name))
PY
echo "$want" > "$stamp"
echo "$jars"
