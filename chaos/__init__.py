"""A Jepsen-style fault campaign for pykbroker: workloads with stock clients, a nemesis on a real cluster,
and a checker of what was recorded.

- ``history``: what a run records (produced records and their acknowledgements, consumed records, committed
  offsets, high watermarks seen, faults); JSON in and out.
- ``checker``: pure functions over a history, one per promise; each returns its violations.
- ``workloads``: stock-client (librdkafka) producers, consumer groups, transactions, a copier, keyed updates.
- ``java_workload``: the Java client's VerifiableProducer and VerifiableConsumer group as workloads.
- ``network``, ``cluster``: fault-injecting TCP proxies on every link; ``ProxiedCluster`` puts a cluster behind them.
- ``nemesis``: bounded, healed faults (kills, pauses, ZooKeeper restarts, network partitions, full disks).
- ``kafka_target``: Apache Kafka 4.1 (KRaft) behind the nemesis' interface, for comparison runs.
- ``kill_loop``: a single node killed with ``kill -9`` again and again under acks=all load.
- ``campaign``: runs workloads and nemesis, checks, prints the verdict, writes history and timeline.

    python -m chaos --duration 600 --seed 7 --faults kill-leader,pause-session,partition-leader
"""
