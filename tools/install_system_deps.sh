#!/usr/bin/env bash
# Installs the non-Python tools the tests drive: kcat (librdkafka's CLI), chromium (the console page's
# browser test, headless), a C compiler (the chaos campaign's clock-jump builds chaos/clock_shift.c, an
# LD_PRELOAD library that moves one broker's wall clock), FUSE 3 (libfuse3 and fusermount3: chaos/flaky_fs.py
# turns a log dir read-only or failing under a running broker), a C++ compiler and zstd/lz4 headers (librdkafka's
# integration test runner, built lazily by compat_tests/rdkafka_suite/build.sh).
# Idempotent: does nothing when everything is already present.
set -euo pipefail
need=()
command -v kcat >/dev/null 2>&1 || need+=(kcat)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v cc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v fusermount3 >/dev/null 2>&1 || need+=(fuse3)
command -v c++ >/dev/null 2>&1 || need+=(g++)
[ -f /usr/include/zstd.h ] || need+=(libzstd-dev)
[ -f /usr/include/lz4.h ] || need+=(liblz4-dev)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing system packages: ${need[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
