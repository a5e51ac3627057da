#!/usr/bin/env bash
# Copy Apache Kafka's jars (see pom.xml) and their dependencies into compat_tests/jvm/.cache/jars-VERSION, once.
# Usage: compat_tests/jvm/fetch_jars.sh [VERSION]   (prints the jar directory; a no-op when the cache is there)
# Without VERSION: the pom's Kafka version (4.4.0, the judge). With VERSION (e.g. 4.2.0, whose Java share
# consumer some share-group tests drive): that version. Every version has its own folder, so a checkout on
# another judge sharing the cache never overwrites this one's jars.
# Run java with: java -cp "compat_tests/jvm/.cache/jars-4.4.0/*" org.apache.kafka.tools.DumpLogSegments ...
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="${1:-}"
if [[ -n "$version" && ! "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    echo "fetch_jars.sh: VERSION must look like 4.2.0, not '$version'" >&2
    exit 2
fi
if [[ -z "$version" ]]; then
    version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")"
fi
jars="$here/.cache/jars-$version"
stamp="$here/.cache/jars-$version.stamp"
# The stamp holds the pom's hash and the version: editing the pom (another dependency) refreshes the cache.
want="$(sha256sum "$here/pom.xml" | cut -d' ' -f1) $version"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -n "$(ls -A "$jars" 2>/dev/null)" ]]; then
    echo "$jars"
    exit 0
fi
command -v mvn >/dev/null || { echo "fetch_jars.sh: mvn (Maven 3.8+) is required" >&2; exit 1; }
rm -rf "$jars"
mkdir -p "$jars"
mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies -DoutputDirectory="$jars" -DincludeScope=runtime \
    -Dkafka.version="$version" >&2
echo "$want" > "$stamp"
echo "$jars"
