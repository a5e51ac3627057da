"""A broker's ZooKeeper side in its own process, for tests that kill it with SIGKILL:

    python -m tests.replication.metadata.zk.zk_member CONNECT BROKER_ID SESSION_TIMEOUT_MS

registers the broker, takes part in the controller election, prints one line ``ready <controller id>`` (and
``elected <epoch>`` whenever it becomes controller), then waits to be killed.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys

from replication.metadata.zk.broker_registration import BrokerRegistration
from replication.metadata.zk.client import ZooKeeperClient
from replication.metadata.zk.controller_election import ControllerElection
from replication.metadata.zk.znodes import Endpoint


async def main(connect: str, broker_id: int, session_timeout_ms: int) -> None:
    zk = ZooKeeperClient(connect, session_timeout_ms=session_timeout_ms)
    await zk.start()
    await BrokerRegistration(zk, broker_id, [Endpoint("PLAINTEXT", "127.0.0.1", 9000 + broker_id)]).register()
    election = ControllerElection(zk, broker_id, on_elected=lambda epoch, _v: print(f"elected {epoch}", flush=True))
    await election.start()
    print(f"ready {election.active_controller_id}", flush=True)
    await asyncio.Event().wait()


def spawn_member(connect: str, broker_id: int, session_timeout_ms: int) -> tuple[subprocess.Popen, list[str]]:
    """Start a member and wait for its ``ready`` line; returns the process and the lines it printed."""
    proc = subprocess.Popen([sys.executable, "-m", "tests.replication.metadata.zk.zk_member", connect, str(broker_id),
                             str(session_timeout_ms)], stdout=subprocess.PIPE, text=True)
    lines = []
    while True:
        line = proc.stdout.readline()
        if not line:
            proc.wait()
            raise RuntimeError(f"zk_member exited with {proc.returncode}: {lines}")
        lines.append(line.strip())
        if line.startswith("ready"):
            return proc, lines


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
