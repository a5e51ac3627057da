#!/usr/bin/env bash
# Fetches the Iceberg REST catalog the tests run against: Project Nessie's server (Apache-2.0), one runnable
# Quarkus jar (org.projectnessie.nessie:nessie-quarkus:<version>:runner) from Maven Central, into
# tools/nessie/.cache (gitignored); idempotent. tests/nessie_server.py runs it (make test-iceberg-slow).
set -euo pipefail
VERSION="${NESSIE_VERSION:-0.99.0}"
here="$(cd "$(dirname "$0")" && pwd)"
jar="$here/.cache/nessie-quarkus-$VERSION-runner.jar"
if [ -s "$jar" ]; then
  exit 0
fi
command -v mvn >/dev/null || { echo "tools/nessie/fetch_jar.sh: mvn (Maven 3.8+) is required" >&2; exit 1; }
mkdir -p "$here/.cache"
mvn -q -B dependency:copy -Dartifact="org.projectnessie.nessie:nessie-quarkus:$VERSION:jar:runner" \
    -DoutputDirectory="$here/.cache" -Dmdep.overWriteReleases=false >&2
echo "$jar"
