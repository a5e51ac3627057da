#!/usr/bin/env bash
# Installs compat_tests/kafkajs's pinned npm packages (kafkajs 2.2.4 and the snappy/lz4 codecs, package-lock.json
# with their integrity hashes) into its node_modules, once: idempotent, and offline when npm's cache has them.
# Does nothing without node/npm (the KafkaJS tests are then skipped).
set -euo pipefail
cd "$(dirname "$0")"
command -v npm >/dev/null 2>&1 || { echo "npm not found: the KafkaJS tests will be skipped"; exit 0; }
stamp=node_modules/.installed-lock
if [ -f "$stamp" ] && cmp -s package-lock.json "$stamp"; then exit 0; fi
npm ci --prefer-offline --no-audit --no-fund --loglevel=error >&2
cp package-lock.json "$stamp"
