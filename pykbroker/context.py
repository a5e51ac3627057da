"""Per-request state handed to handlers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from wire import ErrorCode, RequestHeader

# Kafka's principal of unauthenticated connections (PLAINTEXT, and SSL without a client certificate).
ANONYMOUS = "User:ANONYMOUS"

if TYPE_CHECKING:
    from pykbroker.config import Listener
    from pykbroker.services import BrokerServices
    from replication.metadata.image import MetadataImage


@dataclass(slots=True)
class ClientInformation:
    """The client software a connection's ApiVersions (v3+) named, as Kafka's ClientInformation ("unknown")."""

    software_name: str = "unknown"
    software_version: str = "unknown"


@dataclass(slots=True)
class RequestContext:
    """What a handler knows about the request besides its body."""

    header: RequestHeader
    broker: BrokerServices  # the named services a handler may use, not the whole Broker
    listener: Listener
    client_address: str
    # Set by a handler whose client went over its quota: the connection reads nothing more for this long
    # after the response is sent (Kafka mutes the channel, KIP-219).
    throttle_ms: int = 0
    # The authenticated principal, "<type>:<name>": User:ANONYMOUS, a SASL user, or a certificate's DN.
    principal: str = ANONYMOUS
    # Authenticated with a delegation token (SCRAM with tokenauth=true): such clients may not manage tokens.
    token_authenticated: bool = False
    # Request quotas (request_percentage, pykbroker.request_time): whether this request's handling time is
    # measured, the time so far, the start of the running step, and the throttle once recorded.
    measure_time: bool = False
    request_time_s: float = 0.0
    step_started: float = 0.0
    request_throttle: int | None = None
    # The connection's client software (shared by its requests; ApiVersions sets it).
    client_information: ClientInformation = field(default_factory=ClientInformation)

    @property
    def metadata(self) -> MetadataImage:
        """The cluster metadata image as it is now (topics, partitions, brokers, configs, features)."""
        return self.broker.metadata.image

    @property
    def api_version(self) -> int:
        return self.header.request_api_version

    @property
    def client_id(self) -> str | None:
        return self.header.client_id

    @property
    def correlation_id(self) -> int:
        return self.header.correlation_id

    @property
    def user(self) -> str:
        """The principal's name, as client quotas key users (Kafka's ``principal.getName``)."""
        return self.principal.split(":", 1)[1]

    def not_hosted_error(self, topic: str, partition: int) -> int:
        """Kafka's code for a partition this broker does not host (getPartitionOrError): NOT_LEADER_OR_FOLLOWER when
        the metadata has it (its log still being created after CreateTopics answered, or led elsewhere), which
        clients retry after refreshing their metadata, else UNKNOWN_TOPIC_OR_PARTITION."""
        if self.metadata.partition(topic, partition) is not None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    def describe(self) -> str:
        """Ids for log lines."""
        return (f"client_id={self.client_id} correlation_id={self.correlation_id} "
                f"client={self.client_address} principal={self.principal}")
