"""Which of samplecheck's tests judge backends; the rest test the framework itself.

A test judges backends when the registry parametrizes it: one of its parameters is a cell of
the registry's matrix (`combo`: a `Combo`) or names a backend of a record (`error_case`:
(record, backend, error input); the bad-input table's `bad_input`: (entry, backend)). The
framework's self-tests (statistics, rounding, the catalog, the report, plug-in loading, ...)
take no such parameter. Under `--sc-backend-only` the plugin keeps only the tests that judge;
under `--sc-cells` only those that judge one of the named (record, backend) pairs.
"""

from samplecheck.registry.matrix import Combo
from samplecheck.registry.records import Backend, KernelInfo


def judges_backends(item) -> bool:
    """Whether the collected test `item` judges a registered backend. A test whose registry
    parametrization came out empty (pytest's NOTSET placeholder) judges none."""
    return bool(judged_cells(item))


def judged_cells(item) -> set[tuple[str, str]]:
    """The (record, backend) pairs the collected test `item` judges (empty: a framework test)."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return {cell for value in params.values() for cell in _cells(value)}


def parse_cells(text: str) -> set[tuple[str, str]]:
    """`--sc-cells`' value: RECORD/BACKEND pairs separated by commas."""
    cells = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        record, sep, backend = part.partition("/")
        if not sep or not record or not backend:
            raise ValueError(f"--sc-cells takes RECORD/BACKEND[,RECORD/BACKEND...], got {part!r}")
        cells.add((record, backend))
    return cells


def _cells(value) -> list[tuple[str, str]]:
    if isinstance(value, Combo):
        return [(value.info.name, value.backend.name)]
    if isinstance(value, tuple):
        record = next((v.name if isinstance(v, KernelInfo) else v.kernel for v in value
                       if isinstance(v, KernelInfo) or isinstance(getattr(v, "kernel", None), str)), None)
        return [(record, v.name) for v in value if isinstance(v, Backend)]
    return []
