"""Topic and config administration: one module per API (CreateTopics, DescribeConfigs, ...).

Importing this package imports every module in it, and so registers every admin handler; adding an
API is adding a module.
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")
