#!/usr/bin/env bash
# Copy Kafka Streams' jars (see pom.xml) and their dependencies into compat_tests/jvm/streams/.cache/jars, once.
# Usage: compat_tests/jvm/streams/fetch_jars.sh   (prints the jar directory; a no-op when the cache is there)
# Run the test application with: java -cp "compat_tests/jvm/streams/.cache/jars/*" StreamsCountApp.java ...
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
jars="$here/.cache/jars"
stamp="$here/.cache/jars.stamp"
# The stamp holds the pom's hash: editing the pom (a new Kafka Streams version) refreshes the cache.
want="$(sha256sum "$here/pom.xml" | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -n "$(ls -A "$jars" 2>/dev/null)" ]]; then
    echo "$jars"
    exit 0
fi
command -v mvn >/dev/null || { echo "fetch_jars.sh: mvn (Maven 3.8+) is required" >&2; exit 1; }
rm -rf "$jars"
mkdir -p "$jars"
mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies -DoutputDirectory="$jars" -DincludeScope=runtime >&2
echo "$want" > "$stamp"
echo "$jars"
