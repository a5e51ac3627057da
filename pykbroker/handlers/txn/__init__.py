"""Idempotence and transactions: one module per API (InitProducerId, AddPartitionsToTxn, EndTxn, ...).

Importing this package imports every module in it, and so registers every handler.
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")
