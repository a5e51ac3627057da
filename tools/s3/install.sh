#!/usr/bin/env bash
# Builds the S3-compatible server the tiered storage tests run against: versitygw (Apache-2.0), an S3 gateway
# over a plain directory (its "posix" backend), from the Go module proxy. One static binary, no service to set
# up; MinIO's server is AGPL and not used. Installed into tools/s3/.cache/bin (gitignored); idempotent.
set -euo pipefail
VERSION="${VERSITYGW_VERSION:-v1.8.0}"
here="$(cd "$(dirname "$0")" && pwd)"
bin="$here/.cache/bin/versitygw"
stamp="$here/.cache/versitygw-$VERSION"
if [ -x "$bin" ] && [ -e "$stamp" ]; then
  exit 0
fi
if ! command -v go >/dev/null 2>&1; then
  echo "tools/s3/install.sh: go is not installed; the S3 backend tests will be skipped" >&2
  exit 0
fi
mkdir -p "$here/.cache/bin"
echo "building versitygw $VERSION (S3 server for the tiered storage tests)"
GOBIN="$here/.cache/bin" GOFLAGS=-mod=mod go install "github.com/versity/versitygw/cmd/versitygw@$VERSION"
touch "$stamp"
