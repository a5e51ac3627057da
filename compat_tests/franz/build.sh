#!/usr/bin/env bash
# Build compat_tests/franz (franz-go, pinned in go.mod/go.sum, from the Go module proxy) into .cache/franz-compat,
# once per source change; prints the binary's path. Without Go it prints nothing and exits 0 (the test skips).
set -euo pipefail
cd "$(dirname "$0")"
GO=$(command -v go || true)
[ -n "$GO" ] || { [ -x /usr/local/go/bin/go ] && GO=/usr/local/go/bin/go; } || true
if [ -z "$GO" ]; then
    echo "go not found: the franz-go tests will be skipped" >&2
    exit 0
fi
mkdir -p .cache
stamp=".cache/$(cat go.mod go.sum main.go | sha256sum | cut -c1-16).stamp"
if [ ! -f "$stamp" ] || [ ! -x .cache/franz-compat ]; then
    "$GO" build -mod=readonly -o .cache/franz-compat . >&2
    rm -f .cache/*.stamp
    touch "$stamp"
fi
echo "$PWD/.cache/franz-compat"
