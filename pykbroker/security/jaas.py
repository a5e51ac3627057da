"""JAAS configuration text, as in ``sasl.jaas.config``: ``<LoginModule> <flag> key=value ...;`` entries.

Values are bare words or double-quoted strings (backslash escapes the next character), as Kafka's
JaasConfig tokenizer reads them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pykbroker.config import ConfigError

_FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|([^\s=;"]+)|(=)|(;))', re.S)


@dataclass(frozen=True)
class JaasEntry:
    """One login module with its control flag and options."""

    login_module: str
    flag: str
    options: dict[str, str]


def _tokens(prop: str, text: str) -> list[tuple[str, str]]:
    """(kind, text) pairs: kind is 'word', 'quoted', '=' or ';'."""
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ConfigError(f"{prop}: cannot parse the JAAS configuration near '{text[pos:pos + 20]}'")
        if m.group(1) is not None:
            out.append(("quoted", re.sub(r"\\(.)", r"\1", m.group(1), flags=re.S)))
        elif m.group(2) is not None:
            out.append(("word", m.group(2)))
        else:
            out.append((m.group(3) or m.group(4), m.group(3) or m.group(4)))
        pos = m.end()
    return out


def parse_jaas_config(prop: str, text: str) -> list[JaasEntry]:
    """Every entry of ``text``; a ConfigError naming ``prop`` (never quoting a password) when it is malformed."""
    tokens = _tokens(prop, text)
    entries: list[JaasEntry] = []
    i = 0
    while i < len(tokens):
        if i + 1 >= len(tokens) or tokens[i][0] != "word" or tokens[i + 1][1].lower() not in _FLAGS:
            raise ConfigError(f"{prop}: expected '<LoginModule> required|requisite|sufficient|optional ...;'")
        module, flag = tokens[i][1], tokens[i + 1][1].lower()
        i += 2
        options: dict[str, str] = {}
        while i < len(tokens) and tokens[i][0] != ";":
            if i + 2 >= len(tokens) or tokens[i][0] != "word" or tokens[i + 1][0] != "=" \
                    or tokens[i + 2][0] not in ("word", "quoted"):
                raise ConfigError(f"{prop}: login module {module}: options must be key=value")
            options[tokens[i][1]] = tokens[i + 2][1]
            i += 3
        if i >= len(tokens):
            raise ConfigError(f"{prop}: login module {module}: the entry must end with ';'")
        i += 1
        entries.append(JaasEntry(module, flag, options))
    if not entries:
        raise ConfigError(f"{prop}: no login module is configured")
    return entries
