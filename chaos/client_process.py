"""A librdkafka workload (``workloads.ProducerWorkload``, ``TransactionWorkload`` or ``WatermarkSampler``) in a
process of its own, so that the client aborting (librdkafka asserts, e.g. ``eonce->refcnt > 0`` under
partitions) ends that one workload instead of the whole campaign; ``ClientProcess`` starts it again.

The child prints every history entry as a JSON line; ``{"sent": ...}`` before a record is handed to the
client and ``{"pending": [...]}`` when a transaction asks for its outcome (``[]`` once recorded), so that what a dead child left in
flight is recorded as indeterminate: sent records as failed deliveries (they may or may not be stored),
an open transaction as ``txn="unknown"`` (stored whole or not at all). SIGTERM asks the child to stop:
the workload's own ``stop()`` flushes, then the child exits 0.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from chaos.history import Commit, Consumed, History, Produced, Watermark
from chaos.workloads import (
    REPO,
    Clock,
    ProducerWorkload,
    TransactionWorkload,
    WatermarkSampler,
    Workload,
    child_event,
)

KINDS = ("producer", "transactions", "watermarks")
ENTRIES = {"produced": Produced, "consumed": Consumed, "commit": Commit, "watermark": Watermark}
TIMES = ("sent", "acked", "at")  # fields holding a time, shifted from the child's monotonic clock to the run's
DIED = "process died with the record in flight"


class ClientProcess(Workload):
    """``kind`` run as ``python -m chaos.client_process`` with ``options`` (the workload's keyword arguments
    besides name, history and clock), started again under a new instance name whenever it dies while the run
    goes on (``crashed_runs``; its stderr is in ``log_path``)."""

    def __init__(self, name: str, history: History, clock: Clock, kind: str, options: dict[str, Any],
                 log_path: Path) -> None:
        super().__init__(name, history, clock)
        if kind not in KINDS:
            raise ValueError(f"unknown client process kind {kind!r}; known: {', '.join(KINDS)}")
        self.kind, self.options, self.log_path = kind, options, log_path
        self.proc: subprocess.Popen | None = None
        self.runs = 0
        self.crashed_runs = 0
        self.stats: dict[str, Any] = {}  # the last run's {"end": ...} line: the workload's counters
        self._lock = threading.Lock()  # starting a child vs. stop() signalling it
        self._in_flight: dict[str, Produced] = {}  # value -> sent, not yet acknowledged or failed
        self._pending: list[Produced] = []  # the transaction waiting for its outcome
        self._next_seq = 0

    def _run(self) -> None:
        offset = self.clock() - time.monotonic()
        with open(self.log_path, "a") as log:
            while True:
                with self._lock:
                    if self._stop.is_set() and self.runs:
                        return
                    self.runs += 1
                    instance = self.name if self.runs == 1 else f"{self.name}.r{self.runs}"
                    name = instance if self.kind == "transactions" else self.name  # the values' prefix
                    self.proc = proc = subprocess.Popen(
                        [sys.executable, "-m", "chaos.client_process", self.kind, "--name", name,
                         "--options", json.dumps(self._run_options(instance))],
                        cwd=REPO, stdout=subprocess.PIPE, stderr=log, text=True)
                assert proc.stdout is not None
                for line in proc.stdout:
                    self._record(line, offset, log)
                proc.wait()
                if proc.returncode == 0 or (self._stop.is_set() and self.stats):
                    return  # done (an error it could not handle is in its "end" line, now in errors)
                self._settle_in_flight()
                self.crashed_runs += 1
                log.write(f"--- {instance} exited with {proc.returncode} at {self.clock():.1f}s; "
                          f"{'starting it again' if not self._stop.is_set() else 'the run is stopping'}\n")
                log.flush()
                if self._stop.is_set():
                    return

    @property
    def pending_transaction(self) -> list[Produced]:
        """The records of the transaction the child is waiting on (empty between transactions)."""
        return list(self._pending)

    def _run_options(self, instance: str) -> dict[str, Any]:
        if self.kind == "producer":
            return {**self.options, "first_seq": self._next_seq, "instance": instance}
        if self.kind == "transactions":
            return {**self.options, "transactional_id": self.name}
        return self.options

    def _record(self, line: str, offset: float, log) -> None:
        event = child_event(line, log)
        if event is None:
            return
        if "sent" in event:
            p = self._entry(Produced, event["sent"], offset)
            self._in_flight[p.value] = p
            self._next_seq = max(self._next_seq, p.seq + 1)
        elif "pending" in event:
            self._pending = [self._entry(Produced, e, offset) for e in event["pending"]]
        elif "end" in event:
            self.stats = event["end"]
            self.errors += [f"{self.name}: {e}" for e in self.stats.get("errors", [])]
        else:
            (kind, fields), = event.items()
            entry = self._entry(ENTRIES[kind], fields, offset)
            if isinstance(entry, Produced):
                self._in_flight.pop(entry.value, None)
            self.history.add(entry)

    @staticmethod
    def _entry(cls, fields: dict[str, Any], offset: float):
        for name in TIMES:
            if fields.get(name):
                fields[name] = round(fields[name] + offset, 3)
        return cls(**fields)

    def _settle_in_flight(self) -> None:
        """What the dead child left in flight: may or may not be stored, so recorded as indeterminate."""
        now = self.clock()
        for p in self._in_flight.values():
            p.error, p.acked = DIED, now
            self.history.add(p)
        for p in self._pending:
            p.acked = now
            self.history.add(p)
        self._in_flight.clear()
        self._pending = []

    def request_stop(self) -> None:
        with self._lock:
            self._stop.set()
            if self.proc is not None and self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)

    def stop(self, timeout: float = 150.0) -> None:
        """Ask the child to finish (a producer delivers or fails what is in flight); kill it after ``timeout``."""
        self.request_stop()
        self._thread.join(timeout)
        if self._thread.is_alive():
            self.errors.append(f"{self.name}: did not stop within {timeout}s; killed")
            self.kill()
            self._thread.join(10)  # the reader ends once the killed child's pipe is drained

    def kill(self) -> None:
        with self._lock:
            self._stop.set()
            if self.proc is not None and self.proc.poll() is None:
                self.proc.kill()


class _Printed(History):
    """A history that prints each entry as a JSON line instead of keeping it."""

    def add(self, item) -> None:
        kind = next(k for k, cls in ENTRIES.items() if isinstance(item, cls))
        emit({kind: asdict(item)})


_emit_lock = threading.Lock()


def emit(event: dict) -> None:
    with _emit_lock:  # delivery callbacks and the workload's thread both print
        sys.stdout.write(json.dumps(event, separators=(",", ":")) + "\n")
        sys.stdout.flush()


def build(kind: str, name: str, options: dict[str, Any]) -> Workload:
    history = _Printed()
    clock = time.monotonic
    if kind == "producer":
        return ProducerWorkload(name, history, clock, **options,
                                on_sent=lambda p: emit({"sent": asdict(p)}))
    if kind == "transactions":
        return TransactionWorkload(name, history, clock, **options,
                                   on_pending=lambda ps: emit({"pending": [asdict(p) for p in ps]}))
    return WatermarkSampler(name, history, clock, **options)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos.client_process", description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("--name", required=True)
    parser.add_argument("--options", required=True, help="the workload's keyword arguments, as JSON")
    args = parser.parse_args(argv)
    # SIGTERM's handler only appends to a list: an Event.set() there could deadlock the Event.wait() it interrupts
    # (the handler runs in the main thread, which may hold the Event's lock), and the producer then went on
    # writing until the campaign killed it 150 s later ("did not stop within 150.0s")
    terminated: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _: terminated.append(signum))
    workload = build(args.kind, args.name, json.loads(args.options)).start()
    while not terminated and workload.is_alive():  # else it ended on its own: an error it could not handle
        time.sleep(0.2)
    workload.stop()
    stats: dict[str, Any] = {"errors": workload.errors}
    if isinstance(workload, TransactionWorkload):
        stats["outcomes"] = workload.outcomes
    emit({"end": stats})
    return 1 if workload.errors else 0


if __name__ == "__main__":
    sys.exit(main())
