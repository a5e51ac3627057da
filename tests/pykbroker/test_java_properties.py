"""server.properties read as java.util.Properties reads it, and written so that it reads back."""

from __future__ import annotations

import stat

import pytest

from pykbroker import java_properties
from pykbroker.java_properties import PropertiesError
from pykbroker.testing import BrokerProcess, RawClient


def test_separators_comments_and_blank_lines():
    text = "# comment\n! also a comment\n\n  a=1\nb: 2\nc 3\nd\t=\t4\ne\n"
    assert java_properties.loads(text) == {"a": "1", "b": "2", "c": "3", "d": "4", "e": ""}


def test_escapes_as_java_reads_them():
    text = ("path=C:\\\\data\\\\kafka\n"        # a doubled backslash is one backslash
            "a\\=b=c\n"                          # an escaped separator belongs to the key
            "key\\ with\\ spaces = v\n"
            "tab=x\\ty\n"
            "unicode=caf\\u00e9\n"
            "other=\\q\n")                       # an escaped ordinary character is that character
    assert java_properties.loads(text) == {"path": "C:\\data\\kafka", "a=b": "c", "key with spaces": "v",
                                           "tab": "x\ty", "unicode": "café", "other": "q"}


def test_continuation_lines_and_an_escaped_final_backslash():
    text = ("sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
            "    username=\"admin\" \\\n"
            "    password=\"secret\";\n"
            "ends.in.backslash=dir\\\\\n"
            "next=1\n"
            "# a comment ending in a backslash does not continue \\\n"
            "after=2\n")
    props = java_properties.loads(text)
    assert props["sasl.jaas.config"] == ('org.apache.kafka.common.security.plain.PlainLoginModule required '
                                         'username="admin" password="secret";')
    assert props["ends.in.backslash"] == "dir\\" and props["next"] == "1" and props["after"] == "2"


def test_a_malformed_unicode_escape_is_refused():
    with pytest.raises(PropertiesError, match="malformed"):
        java_properties.loads("a=\\u12x4\n")


@pytest.mark.parametrize("props", [
    {"a": "plain", "b": "with = and : and # and !", "c": "C:\\dir\\", " lead": " leading space"},
    {"multi": "line one\nline two\ttab", "empty": "", "unicode": "日本 café"},
])
def test_dumps_reads_back_unchanged(props):
    assert java_properties.loads(java_properties.dumps(props)) == props


def test_broker_process_keeps_its_overrides_off_the_command_line(tmp_path):
    secret = "s3-secret-key-do-not-show"
    with BrokerProcess(tmp_path / "b", overrides={"message.max.bytes": "2000000",
                                                   "ssl.keystore.password": secret}) as broker:
        with RawClient(broker.bootstrap):
            pass  # it started from the file
        assert secret not in " ".join(broker.command())
        assert stat.S_IMODE(broker.properties_path.stat().st_mode) == 0o600
        assert java_properties.loads(broker.properties_path.read_text())["ssl.keystore.password"] == secret
        cmdline = (f"/proc/{broker.proc.pid}/cmdline")
        with open(cmdline, "rb") as f:
            assert secret.encode() not in f.read()
