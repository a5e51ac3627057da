"""The coordinator runtime shared by the group, transaction and share coordinators.

A coordinator's state is the replay of the records of its internal topic, one single-writer shard
per partition this node leads. Modules:

- ``runtime`` — ``CoordinatorRuntime``: shard tasks and queues, appends, replay at load, timers,
  loading on election and unloading on resignation;
- ``log`` — ``CoordinatorLog``, the interface to one partition, and the in-memory implementation;
  ``partition_log`` — the implementation over the replica manager (acks=all);
- ``result`` — ``CoordinatorResult``, what an operation returns (records + response);
- ``errors`` — ``ApiError`` and append errors; ``clock`` / ``timer`` — injected time.
"""
