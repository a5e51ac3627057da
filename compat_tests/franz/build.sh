#!/usr/bin/env bash
# Build compat_tests/franz (franz-go, pinned in go.mod/go.sum, from the Go module proxy) into .cache/franz-compat,
# once per source change; prints the binary's path. Without Go it prints nothing and exits 0 (the test skips).
set -euo pipefail
cd "$(dirname "$0")"
SKIPPED="the franz-go tests" source ./find_go.sh
mkdir -p .cache
stamp=".cache/$(cat go.mod go.sum main.go | sha256sum | cut -c1-16).stamp"
if [ ! -f "$stamp" ] || [ ! -x .cache/franz-compat ]; then
    "$GO" build -mod=readonly -o .cache/franz-compat . >&2
    rm -f .cache/*.stamp
    touch "$stamp"
fi
echo "$PWD/.cache/franz-compat"
