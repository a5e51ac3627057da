"""What the telemetry handlers share: a client's match attributes, from its request and connection."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from pykbroker.context import RequestContext
from replication.metadata.embedded_store import uuid_to_kafka_string


def client_attributes(ctx: RequestContext) -> Callable[[uuid.UUID], dict[str, str | None]]:
    """The attributes a subscription's ``match`` sees (Kafka's ClientMetricsInstanceMetadata), once the instance
    id is known."""
    address, _, port = ctx.client_address.rpartition(":")

    def attributes(client_instance_id: uuid.UUID) -> dict[str, str | None]:
        info = ctx.client_information
        return {"client_instance_id": uuid_to_kafka_string(client_instance_id), "client_id": ctx.client_id,
                "client_software_name": info.software_name, "client_software_version": info.software_version,
                "client_source_address": address or None, "client_source_port": port or None}

    return attributes
