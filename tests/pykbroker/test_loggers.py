"""Broker log levels at runtime (the BROKER_LOGGER resource), checked and applied as Kafka does."""

from __future__ import annotations

import logging

import pytest

from pykbroker import loggers


@pytest.fixture
def probe():
    logger = logging.getLogger("pykbroker.test-probe")
    yield logger
    logger.setLevel(logging.NOTSET)


def test_levels_are_listed_in_kafkas_words(probe):
    probe.setLevel(5)
    levels = loggers.current_levels()
    assert next(iter(levels)) == "root" and levels["pykbroker.test-probe"] == "TRACE"


def test_set_and_unset_a_level(probe):
    loggers.apply([("pykbroker.test-probe", loggers.SET, "ERROR")])
    assert probe.level == logging.ERROR
    loggers.apply([("pykbroker.test-probe", loggers.DELETE, None)])
    assert probe.level == logging.NOTSET  # follows its parent again


@pytest.mark.parametrize("op,invalid_config,text", [
    (("no.such.logger", loggers.SET, "INFO"), True, "Logger no.such.logger does not exist!"),
    (("root", loggers.SET, "LOUD"), True, "Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN"),
    (("root", loggers.DELETE, None), False, "Removing the log level of the root logger is not allowed"),
    (("root", loggers.APPEND, "INFO"), False, "APPEND operation is not allowed for the BROKER_LOGGER resource"),
])
def test_refusals(op, invalid_config, text):
    with pytest.raises(loggers.LoggerChangeError) as exc:
        loggers.validate([op])
    assert exc.value.invalid_config is invalid_config and text in str(exc.value)
