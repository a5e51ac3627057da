"""Which log directories are offline (Kafka's LogDirFailureChannel).

An I/O error (a full disk included) in any operation on a log takes that log's directory offline: it is
recorded here with a clear log line, listeners are told (the log manager closes the directory's logs,
the broker stops leading their partitions), and every later operation on those logs raises
KafkaStorageError instead of touching the disk again. Thread-safe.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("storage.log_dir_failure")

__all__ = ["LogDirFailureChannel"]


class LogDirFailureChannel:
    """The set of offline log directories, and who to tell when one goes offline."""

    def __init__(self) -> None:
        self._offline: dict[str, str] = {}
        self._lock = threading.Lock()
        self._listeners: list[Callable[[str], None]] = []

    def add_listener(self, listener: Callable[[str], None]) -> None:
        self._listeners.append(listener)

    def is_offline(self, log_dir: str) -> bool:
        return log_dir in self._offline

    @property
    def offline_dirs(self) -> dict[str, str]:
        return dict(self._offline)

    def maybe_add_offline_log_dir(self, log_dir: str, message: str, exc: BaseException | None = None) -> None:
        with self._lock:
            if log_dir in self._offline:
                return
            self._offline[log_dir] = message
        log.error("Log directory %s is now offline: %s%s", log_dir, message, f" ({exc})" if exc else "")
        for listener in list(self._listeners):
            try:
                listener(log_dir)
            except Exception:
                log.exception("offline log dir listener failed for %s", log_dir)
