"""Operator declarations, one module per family; importing a family registers its operators."""
import importlib
import pkgutil

_INFRA = {"base", "fixedpoint", "registry", "requant", "signal_arith", "tflite_tables", "util"}

FAMILIES = tuple(
    importlib.import_module(f"{__name__}.{m.name}")
    for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)
    if m.name not in _INFRA and not m.name.startswith("_")
)
