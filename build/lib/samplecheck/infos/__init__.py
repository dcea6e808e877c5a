"""The registry records, one module per kernel. Importing this package registers them all
(every module in this folder, in name order), so a new record needs no edit here."""

import importlib
import pkgutil

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")
