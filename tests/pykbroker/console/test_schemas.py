"""``console.schemas`` without a broker: decoded values as JSON, and ``console.schema.registry.url``'s checks
(the browser tests are ``test_schemas_console.py``)."""

from __future__ import annotations

import datetime
import decimal
import uuid

import pytest

from pykbroker.config import Config, ConfigError
from pykbroker.console.schemas import jsonable


def test_decoded_values_become_json():
    u = uuid.UUID(int=1)
    assert jsonable({"b": b"\x00\xff", "d": decimal.Decimal("1.50"), "t": datetime.date(2026, 1, 2), "u": u,
                     "l": (1, None, [True, 2.5])}) == {
        "b": "00ff", "d": "1.50", "t": "2026-01-02", "u": str(u), "l": [1, None, [True, 2.5]]}


def test_the_registry_url_must_be_http():
    assert Config({"console.schema.registry.url": "http://127.0.0.1:8081/"})["console.schema.registry.url"] == \
        "http://127.0.0.1:8081"
    assert Config({})["console.schema.registry.url"] is None
    with pytest.raises(ConfigError, match="console.schema.registry.url: 'ftp://x' is not an http"):
        Config({"console.schema.registry.url": "ftp://x"})
