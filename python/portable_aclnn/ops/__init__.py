"""The operators' modules: one per C operator folder (src/ops/<folder>/ -> portable_aclnn/ops/<folder>.py).

Each declares ACLNN and ENTRIES (portable_aclnn/_operator.py says what they hold). The shared modules take their
tables from `modules()`, so adding an operator to the package is adding its module here (and its drop-in names, if
it has any, to compat/).
"""

import importlib
import pkgutil

_modules = None


def modules():
    """The operator modules, imported on first use, in the order of their names."""
    global _modules
    if _modules is None:
        names = sorted(info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_"))
        _modules = tuple(importlib.import_module(f"{__name__}.{name}") for name in names)
    return _modules


def aclnn_calls():
    """Every operator's AclnnCall declarations."""
    return [call for module in modules() for call in module.ACLNN]


def entries():
    """Every operator's Entry declarations, by name."""
    table = {}
    for module in modules():
        for entry in module.ENTRIES:
            if entry.name in table:
                raise RuntimeError(f"portable_aclnn: {entry.name} is declared by {module.__name__} and another module")
            table[entry.name] = entry
    return table
