"""The broker's log lines: one per event, even when a client-chosen name holds a line break."""

from __future__ import annotations

import logging
import time

from pykbroker.log_format import FORMAT, OneLineFormatter, escape_controls
from pykbroker.testing import RawClient
from wire.messages.join_group_request import JoinGroupRequest, JoinGroupRequestProtocol

FORGED = "[2026-01-01 00:00:00,000] ERROR pykbroker.broker: forged"


def test_control_characters_and_line_breaks_are_escaped():
    assert escape_controls("a\nb\rc\td\x1b[31me\x7f\u2028") == "a\\nb\\rc\\td\\x1b[31me\\x7f\\u2028"
    assert escape_controls("grüße-日本") == "grüße-日本"  # printable text is left alone


def test_the_message_is_one_line_and_a_traceback_keeps_its_lines():
    formatter = OneLineFormatter(FORMAT)
    record = logging.LogRecord("pykbroker.test", logging.INFO, __file__, 1, "group %s joined", ("g\n" + FORGED,), None)
    assert "\n" not in formatter.format(record)
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        record.exc_info = sys.exc_info()
    assert formatter.format(record).count("\n") >= 2  # the traceback, on its own lines


def test_a_group_id_cannot_forge_a_broker_log_line(broker):
    group = "innocent\n" + FORGED
    with RawClient(broker.bootstrap) as c:
        c.send(JoinGroupRequest(group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                protocol_type="consumer",
                                protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")]), 3)
        deadline = time.monotonic() + 20
        while "innocent\\n[2026" not in broker.log():
            assert time.monotonic() < deadline, f"the group was not logged; the log:\n{broker.log()[-3000:]}"
            time.sleep(0.1)
    assert not any(line.startswith(FORGED) for line in broker.log().splitlines())
