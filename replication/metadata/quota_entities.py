"""Client quota entities and keys as the metadata stores keep them (Kafka's ClientQuotaEntity and
QuotaConfig); pykbroker.quotas validates, describes and enforces them."""

from __future__ import annotations

__all__ = ["CLIENT_ID", "CONSUMER_BYTE_RATE", "Entity", "IP", "IP_KEYS", "PRODUCER_BYTE_RATE", "REQUEST_PERCENTAGE",
           "USER", "USER_AND_CLIENT_KEYS"]

USER, CLIENT_ID, IP = "user", "client-id", "ip"
PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE = "producer_byte_rate", "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
# Kafka's QuotaConfig: the keys each kind of entity takes, with their types.
USER_AND_CLIENT_KEYS = {PRODUCER_BYTE_RATE: "LONG", CONSUMER_BYTE_RATE: "LONG", REQUEST_PERCENTAGE: "DOUBLE",
                        "controller_mutation_rate": "DOUBLE"}
IP_KEYS = {"connection_creation_rate": "INT"}

Entity = frozenset  # of (entity type, name or None)
