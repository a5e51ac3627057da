"""Confluent's clients' own integration suites against a broker: confluent-kafka-go's ``kafka`` package tests
(``go_suite``). confluent-kafka-python is not here: its newest sdist on PyPI (2.16.1) ships no tests, only the
``kafkatest`` verifiable clients that Kafka's system tests drive."""
