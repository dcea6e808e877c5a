"""Test names come from one catalog (`samplecheck.harness.catalog`): every name there is a
test function of this suite, and no module of samplecheck spells one out itself."""

import ast
from pathlib import Path

import samplecheck
from samplecheck.harness import catalog

COVER = Path(__file__).parent
PACKAGE = Path(samplecheck.__file__).parent


def _tree(path: Path):
    return ast.parse(path.read_text(), filename=str(path))


def _test_names(tree) -> set[str]:
    """Functions, and module-level names bound to tests a function makes (`test_x = f(...)`)."""
    functions = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    bound = {target.id for node in tree.body if isinstance(node, ast.Assign)
             for target in node.targets if isinstance(target, ast.Name) and target.id.startswith("test_")}
    return functions | bound


def test_every_catalog_name_is_a_test_of_the_suite():
    defined = {name for path in COVER.glob("test_*.py") for name in _test_names(_tree(path))}
    assert not set(catalog.NAMES) - defined, f"catalog names without a test: {set(catalog.NAMES) - defined}"


def test_no_module_spells_a_test_name():
    loose = [f"{path.relative_to(PACKAGE)}:{node.lineno} {node.value!r}"
             for path in PACKAGE.rglob("*.py") if path.name != "catalog.py"
             for node in ast.walk(_tree(path))
             if isinstance(node, ast.Constant) and node.value in catalog.NAMES]
    assert not loose, f"test names outside samplecheck.harness.catalog: {loose}"
