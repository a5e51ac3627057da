#!/usr/bin/env bash
# Copy the runtime dependencies of DIR/pom.xml into DIR/.cache/jars, once, and print that directory.
# Usage: tools/maven_jars.sh DIR   (a no-op when the cache is there; the stamp holds the pom's hash, so editing the
# pom — a new version — refreshes it). The fetch_jars.sh scripts beside each pom call this.
set -euo pipefail
here="$(cd "$1" && pwd)"
jars="$here/.cache/jars"
stamp="$here/.cache/jars.stamp"
want="$(sha256sum "$here/pom.xml" | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -n "$(ls -A "$jars" 2>/dev/null)" ]]; then
    echo "$jars"
    exit 0
fi
command -v mvn >/dev/null || { echo "$here/fetch_jars.sh: mvn (Maven 3.8+) is required" >&2; exit 1; }
rm -rf "$jars"
mkdir -p "$jars"
mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies -DoutputDirectory="$jars" -DincludeScope=runtime >&2
echo "$want" > "$stamp"
echo "$jars"
