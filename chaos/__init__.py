"""A Jepsen-style fault campaign for pykbroker: workloads with stock clients, a nemesis on a real cluster,
and a checker of what was recorded.

- ``history``: what a run records (produced records and their acknowledgements, consumed records, committed
  offsets, high watermarks seen, faults); JSON in and out.
- ``checker``: pure functions over a history, one per promise; each returns its violations.
- ``workloads``: stock-client (librdkafka) producers, consumer groups, transactions, a copier, keyed updates.
- ``nemesis``: bounded, healed faults on a ``ClusterProcesses`` cluster.
- ``campaign``: runs workloads and nemesis, checks, prints the verdict, writes history and timeline.

    python -m chaos --duration 600 --seed 7 --faults kill-leader,pause-zk-session
"""
