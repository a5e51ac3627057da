"""KIP-951 leader hints: a partition answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH also names its
current leader and epoch, and the response lists that leader's endpoint, so a client can go straight to it
instead of refreshing its metadata first (Produce v10+, Fetch v12+ for the leader and v16+ for endpoints)."""

from __future__ import annotations

from replication.metadata.image import MetadataImage
from wire import ErrorCode

__all__ = ["LeaderHints"]

HINTED_ERRORS = frozenset((ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH))


class LeaderHints:
    """The leaders named in one response, for its node_endpoints."""

    def __init__(self, image: MetadataImage, listener: str) -> None:
        self.image = image
        self.listener = listener
        self.nodes: dict[int, tuple[str, int, str | None]] = {}

    def leader(self, topic: str, partition: int, error_code: int) -> tuple[int, int] | None:
        """(leader id, leader epoch) to answer with, or None: no hint for that error, or no known leader."""
        if error_code not in HINTED_ERRORS:
            return None
        p = self.image.partition(topic, partition)
        if p is None or p.leader < 0:
            return None
        broker = self.image.brokers.get(p.leader)
        endpoint = broker.endpoint(self.listener) if broker is not None else None
        if broker is None or endpoint is None:
            return None
        self.nodes[p.leader] = (endpoint.host, endpoint.port, broker.rack)
        return p.leader, p.leader_epoch

    def node_endpoints(self, node_endpoint_class) -> list:
        return [node_endpoint_class(node_id=node_id, host=host, port=port, rack=rack)
                for node_id, (host, port, rack) in sorted(self.nodes.items())]
