"""The names of Kafka 4.4's broker configs that cannot be updated dynamically.

KafkaConfig's names minus DynamicBrokerConfig.AllDynamicConfigs and the internal ones, as a Kafka 4.4 broker lists
them (read-only) in DescribeConfigs; derived from pykbroker.kafka_broker_configs (generated from Kafka's jars). A dynamic change naming one of them is refused ("Cannot update these configs dynamically");
a name that is neither here nor dynamic is a custom config, which Kafka accepts and stores.
"""

from __future__ import annotations

from pykbroker.kafka_broker_configs import KAFKA_BROKER_CONFIGS

__all__ = ["STATIC_BROKER_CONFIG_NAMES"]

STATIC_BROKER_CONFIG_NAMES: frozenset[str] = frozenset(
    name for name, key in KAFKA_BROKER_CONFIGS.items() if key.update_mode == "read-only" and not key.internal)
