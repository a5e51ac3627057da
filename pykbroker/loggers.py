"""Broker log levels at runtime (KIP-412): the BROKER_LOGGER config resource, as Kafka's LoggingController.

DescribeConfigs lists every logger this process has, with its effective level in log4j's words; the
root logger is named ``root``. IncrementalAlterConfigs SET gives a logger a level, DELETE unsets it (it
then follows its parent); the root logger's level cannot be removed. Levels are Kafka's: TRACE, DEBUG,
INFO, WARN, ERROR, FATAL (TRACE is below Python's DEBUG).
"""

from __future__ import annotations

import logging

__all__ = ["ROOT_LOGGER", "VALID_LEVELS", "LoggerChangeError", "current_levels", "validate", "apply"]

ROOT_LOGGER = "root"
TRACE = 5
logging.addLevelName(TRACE, "TRACE")
_TO_PYTHON = {"TRACE": TRACE, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
              "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}
VALID_LEVELS = frozenset(_TO_PYTHON)
_VALID_LEVELS_TEXT = ", ".join(sorted(VALID_LEVELS))
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

log = logging.getLogger("pykbroker.loggers")


class LoggerChangeError(Exception):
    """A refused change: ``invalid_config`` True for INVALID_CONFIG, False for INVALID_REQUEST."""

    def __init__(self, message: str, *, invalid_config: bool) -> None:
        super().__init__(message)
        self.invalid_config = invalid_config


def _kafka_level(level: int) -> str:
    for name, value in sorted(_TO_PYTHON.items(), key=lambda kv: kv[1]):
        if level <= value:
            return name
    return "FATAL"


def _logger(name: str) -> logging.Logger | None:
    if name == ROOT_LOGGER:
        return logging.getLogger()
    existing = logging.Logger.manager.loggerDict.get(name)
    return existing if isinstance(existing, logging.Logger) else None


def current_levels() -> dict[str, str]:
    """Every logger's effective level, by name (``root`` first)."""
    levels = {ROOT_LOGGER: _kafka_level(logging.getLogger().getEffectiveLevel())}
    for name in sorted(logging.Logger.manager.loggerDict):
        logger = _logger(name)
        if logger is not None:
            levels[name] = _kafka_level(logger.getEffectiveLevel())
    return levels


def validate(ops: list[tuple[str, int, str | None]]) -> None:
    """Check (logger, operation, level) changes as Kafka's RuntimeLoggerManager does; raises LoggerChangeError."""
    for name, op, level in ops:
        if op == SET:
            if _logger(name) is None:
                raise LoggerChangeError(f"Logger {name} does not exist!", invalid_config=True)
            if level not in VALID_LEVELS:
                raise LoggerChangeError(f"Cannot set the log level of {name} to {level} as it is not a supported "
                                        f"log level. Valid log levels are {_VALID_LEVELS_TEXT}", invalid_config=True)
        elif op == DELETE:
            if _logger(name) is None:
                raise LoggerChangeError(f"Logger {name} does not exist!", invalid_config=True)
            if name == ROOT_LOGGER:
                raise LoggerChangeError(f"Removing the log level of the {ROOT_LOGGER} logger is not allowed",
                                        invalid_config=False)
        elif op in (APPEND, SUBTRACT):
            raise LoggerChangeError(f"{'APPEND' if op == APPEND else 'SUBTRACT'} operation is not allowed for the "
                                    f"BROKER_LOGGER resource", invalid_config=False)
        else:
            raise LoggerChangeError(f"Unknown operation type {op} is not allowed for the BROKER_LOGGER resource",
                                    invalid_config=False)


def apply(ops: list[tuple[str, int, str | None]]) -> None:
    """Apply validated changes."""
    for name, op, level in ops:
        logger = _logger(name)
        assert logger is not None
        if op == SET:
            assert level is not None  # validated: SET names a level
            logger.setLevel(_TO_PYTHON[level])
            log.warning("Updated the log level of %s to %s", name, level)
        else:
            logger.setLevel(logging.NOTSET)
            log.warning("Unset the log level of %s", name)
