"""Follower fetching (KIP-392): which replica a consumer should read a partition from.

The leader answers a consumer's Fetch (v11+, which names the client's rack) with a preferred read replica
when ``replica.selector.class`` picks one other than itself; the consumer then fetches from that replica,
which serves it up to its own high watermark. As Kafka's ReplicaManager.findPreferredReadReplica, the
candidates are the leader and the followers that are in the ISR and hold the fetch offset (log start <=
offset <= log end); Kafka's ``RackAwareReplicaSelector`` then picks the leader when the client has no rack,
no candidate shares it, or the leader does, else the most caught-up candidate of the client's rack (highest
log end offset, then the most recently caught up). ``LeaderSelector`` (the default) always picks the leader.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["RACK_AWARE_SELECTOR", "LEADER_SELECTOR", "ReplicaView", "rack_aware_select", "selector_for"]

RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
LEADER_SELECTOR = "org.apache.kafka.common.replica.LeaderSelector"


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """A candidate replica: its broker, rack, log end offset and time since it was last caught up."""

    broker_id: int
    rack: str | None
    log_end_offset: int
    time_since_last_caught_up_ms: int = 0


def rack_aware_select(client_rack: str | None, leader: ReplicaView, replicas: Sequence[ReplicaView]) -> ReplicaView:
    """Kafka's RackAwareReplicaSelector.select."""
    if not client_rack:
        return leader
    same_rack = [r for r in replicas if r.rack == client_rack]
    if not same_rack or any(r.broker_id == leader.broker_id for r in same_rack):
        return leader
    return max(same_rack, key=lambda r: (r.log_end_offset, -r.time_since_last_caught_up_ms))


def selector_for(class_name: str | None) -> Callable[[str | None, ReplicaView, Sequence[ReplicaView]], ReplicaView] | None:
    """The selector ``replica.selector.class`` names (None: the leader always serves)."""
    if class_name == RACK_AWARE_SELECTOR:
        return rack_aware_select
    if class_name in (None, "", LEADER_SELECTOR):
        return None
    raise ValueError(f"replica.selector.class {class_name} is not available (pykbroker has {RACK_AWARE_SELECTOR} "
                     f"and {LEADER_SELECTOR})")
