"""Test names come from one catalog (`samplecheck.registry.catalog`): every name there is a
test function of this suite, and no module of samplecheck outside its tests spells one out
itself."""

import ast
from pathlib import Path

import samplecheck
import samplecheck.kernels
import samplecheck.oracles
from samplecheck.registry import catalog
import samplecheck.tests

COVER = Path(__file__).parent


def _modules() -> list[Path]:
    """samplecheck's modules but its tests, whatever the layout: in a checkout its packages are
    separate folders (properties/, kernels/, oracles/, tests/), in an installed wheel kernels/,
    oracles/ and tests/ lie inside samplecheck/."""
    tests = Path(samplecheck.tests.__path__[0])
    roots = {Path(package.__path__[0]) for package in (samplecheck, samplecheck.kernels, samplecheck.oracles)}
    return sorted({path for root in roots for path in root.rglob("*.py") if not path.is_relative_to(tests)})


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
    modules = _modules()
    assert any(path.name == "runner.py" for path in modules) and any("kernels" in path.parts for path in modules)
    loose = [f"{path}:{node.lineno} {node.value!r}"
             for path in modules if path.name != "catalog.py"
             for node in ast.walk(_tree(path))
             if isinstance(node, ast.Constant) and node.value in catalog.NAMES]
    assert not loose, f"test names outside samplecheck.registry.catalog: {loose}"
