"""The broker's log line format: one line per event, whatever a client put in the names it sent.

Group ids, member ids, client ids, transactional ids and principals are client-chosen strings that the
broker logs. A name with a newline in it could otherwise forge a second, well-formed log line (CWE-117);
here control characters in the message are written as escapes (``\\n``, ``\\x1b``). A traceback
attached to a record keeps its lines: it is the broker's own text.
"""

from __future__ import annotations

import logging

__all__ = ["FORMAT", "OneLineFormatter", "escape_controls"]

FORMAT = "[%(asctime)s] %(levelname)s %(name)s: %(message)s"

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ESCAPES = {code: _NAMED.get(chr(code), f"\\x{code:02x}") for code in [*range(0x20), 0x7F]}
_ESCAPES.update({code: f"\\u{code:04x}" for code in (0x85, 0x2028, 0x2029)})  # Unicode line breaks


def escape_controls(text: str) -> str:
    """``text`` with every control character and line break written as a visible escape."""
    return text.translate(_ESCAPES)


class OneLineFormatter(logging.Formatter):
    """A logging.Formatter whose message part never spans lines."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        return escape_controls(super().formatMessage(record))
