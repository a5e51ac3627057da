"""java.util.Properties text, as Kafka reads ``server.properties`` and as pykbroker writes one.

Reading follows ``Properties.load``: ``#``/``!`` comment lines; a line ending in an odd number of
backslashes continues on the next (whose leading whitespace is dropped); the key ends at the first
unescaped ``=``, ``:`` or whitespace; escapes ``\\t \\n \\r \\f \\uXXXX`` and ``\\x`` for any other ``x``.
So ``C:\\\\data`` is ``C:\\data`` and ``a\\=b=c`` has the key ``a=b``, as on Kafka.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["PropertiesError", "dumps", "loads"]

_WHITESPACE = " \t\f"
_SEPARATORS = "=:"
_ESCAPED = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class PropertiesError(ValueError):
    """Text that java.util.Properties refuses too (a malformed ``\\uXXXX``)."""


def _logical_lines(text: str):
    """The logical lines of ``text``: comments and blank lines left out, continuations joined."""
    pending: list[str] = []
    for natural in text.splitlines():
        line = natural.lstrip(_WHITESPACE)
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending.append(line[:-1])
            continue
        pending.append(line)
        yield "".join(pending)
        pending = []
    if pending:
        yield "".join(pending)


def _unescape(raw: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch != "\\" or i + 1 >= len(raw):
            out.append(ch)
            i += 1
            continue
        nxt = raw[i + 1]
        if nxt == "u":
            digits = raw[i + 2:i + 6]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise PropertiesError(f"malformed \\uxxxx encoding in {raw!r}")
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(_ESCAPED.get(nxt, nxt))
            i += 2
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    """The raw key and value of a logical line, split where Properties.load splits them."""
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in _SEPARATORS or ch in _WHITESPACE:
            break
        i += 1
    key, rest = line[:i], line[i:]
    rest = rest.lstrip(_WHITESPACE)
    if rest[:1] and rest[0] in _SEPARATORS:
        rest = rest[1:].lstrip(_WHITESPACE)
    return key, rest


def loads(text: str) -> dict[str, str]:
    """The properties in ``text``; a later line wins over an earlier one with the same key."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split(line)
        props[_unescape(key)] = _unescape(value)
    return props


def _escape(text: str, *, is_key: bool) -> str:
    out: list[str] = []
    for i, ch in enumerate(text):
        if ch == "\\" or ch in "=:#!":
            out.append("\\" + ch)
        elif ch == " " and (is_key or i == 0):
            out.append("\\ ")
        elif ch in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[ch])
        else:
            out.append(ch)
    return "".join(out)


def dumps(props: Mapping[str, str]) -> str:
    """``props`` as properties text that ``loads`` (and Properties.load) read back unchanged."""
    return "".join(f"{_escape(k, is_key=True)}={_escape(v, is_key=False)}\n" for k, v in props.items())
