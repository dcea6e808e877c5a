"""Which of samplecheck's tests judge backends; the rest test the framework itself.

A test judges backends when the registry parametrizes it: one of its parameters is a cell of
the registry's matrix (`combo`: a `Combo`) or names a backend of a record (`error_case`:
(record, backend, error input); the bad-input table's `bad_input`: (entry, backend)). The
framework's self-tests (statistics, rounding, the catalog, the report, plug-in loading, ...)
take no such parameter. Under `--sc-backend-only` the plugin keeps only the tests that judge.
"""

from samplecheck.harness.registry import Backend, Combo


def judges_backends(item) -> bool:
    """Whether the collected test `item` judges a registered backend. A test whose registry
    parametrization came out empty (pytest's NOTSET placeholder) judges none."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return any(_names_backend(value) for value in params.values())


def _names_backend(value) -> bool:
    return isinstance(value, Combo) or (isinstance(value, tuple) and any(isinstance(v, Backend) for v in value))
