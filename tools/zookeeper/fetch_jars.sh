#!/usr/bin/env bash
# Copy Apache ZooKeeper's server jars (see pom.xml) and their dependencies into tools/zookeeper/.cache/jars, once.
# Usage: tools/zookeeper/fetch_jars.sh   (prints the jar directory; a no-op when the cache is there)
# Run with: java -cp "tools/zookeeper/.cache/jars/*" org.apache.zookeeper.server.ZooKeeperServerMain zoo.cfg
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec bash "$here/../maven_jars.sh" "$here"
