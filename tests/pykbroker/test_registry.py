"""The handler registry: the table ApiVersions answers from is what the handler modules declare."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest

import pykbroker.handlers
from pykbroker.handlers import SERVED_APIS
from pykbroker.registry import REGISTRY, ApiHandler, Registry
from wire import REQUESTS, RESPONSES, ApiKey


def handler_modules() -> list[str]:
    """Every module under pykbroker/handlers/ that is not private or a package."""
    return sorted(m.name for m in pkgutil.walk_packages(pykbroker.handlers.__path__, "pykbroker.handlers.")
                  if not m.ispkg and not m.name.rpartition(".")[2].startswith("_")
                  and m.name != "pykbroker.handlers.authorized_operations")


def test_served_apis_is_what_the_handler_modules_register():
    REGISTRY.load_all()
    for module in handler_modules():
        importlib.import_module(module)  # a module missing from the table would register nothing listed
    registered = sorted((e.api_key, e.min_version, e.max_version, e.handle.__module__) for e in REGISTRY)
    assert registered == sorted((int(k), lo, hi, module) for k, lo, hi, module in SERVED_APIS)
    assert {module for *_, module in SERVED_APIS} == set(handler_modules())


def test_api_versions_comes_from_the_table_sorted_by_key():
    assert REGISTRY.api_versions() == sorted((int(k), lo, hi) for k, lo, hi, _ in SERVED_APIS)


def test_a_module_declaring_another_range_is_refused():
    async def handle(ctx, request):
        return None

    registry = Registry([(ApiKey.METADATA, 0, 12, __name__)])
    key = int(ApiKey.METADATA)
    with pytest.raises(ValueError, match="SERVED_APIS"):
        registry.register(ApiHandler(key, 0, 13, handle, None, REQUESTS[key], RESPONSES[key]))
    registry.register(ApiHandler(key, 0, 12, handle, None, REQUESTS[key], RESPONSES[key]))


def test_starting_the_broker_imports_no_handler_module_and_no_coordinator():
    """Start-up cost: the broker imports what serving ApiVersions needs; handler modules on first use."""
    code = """
import asyncio, sys
import pykbroker.cli, pykbroker.server
from pykbroker.registry import REGISTRY
from wire import ApiKey

def imported():
    return sorted(m for m in sys.modules if m.startswith(("pykbroker.handlers.", "coordinator.group")))

print(imported())
assert REGISTRY.get(ApiKey.HEARTBEAT) is None
assert asyncio.run(REGISTRY.load(-1)) is None
async def first_requests():  # at once, as clients on several connections would
    keys = (ApiKey.HEARTBEAT, ApiKey.INIT_PRODUCER_ID, ApiKey.END_TXN, ApiKey.JOIN_GROUP, ApiKey.PRODUCE)
    return await asyncio.gather(*(REGISTRY.load(k) for k in keys), *(REGISTRY.load(k) for k in keys))
entries = asyncio.run(first_requests())
assert entries[:5] == entries[5:] and entries[0] is REGISTRY.get(ApiKey.HEARTBEAT) and entries[0].serves(4)
assert "pykbroker.handlers.group.heartbeat" in imported() and "coordinator.group" in imported()
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
