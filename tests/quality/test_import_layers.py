"""Where code lives: the subpackages of samplecheck import downwards only, in the order LAYERS
states once, and no two import each other.

Every `import samplecheck.X...` and `from samplecheck.X... import` statement of the installed
layout (properties/ as `samplecheck`, kernels/, oracles/), module-level or inside a function,
is an arrow from the importing subpackage to the imported one. An arrow to a higher layer, or
to another subpackage of the same layer that imports back, is a violation. The violations
that remain are listed in `KNOWN`, each with its reason; this test fails on any violation not
in `KNOWN`, and on any entry of `KNOWN` that no longer occurs (remove it: the list only
shrinks).
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Source folder -> the package it installs as (pyproject.toml's package-dir).
FOLDERS = {"properties": "samplecheck", "kernels": "samplecheck.kernels", "oracles": "samplecheck.oracles"}
# Lowest first: a subpackage may import those of lower layers only.
LAYERS = (
    ("kernels", "oracles"),  # the ground: production kernels and references
    ("registry",),  # the test catalog, layouts, checks, the records' vocabulary, the registered matrix
    ("inputs", "judging", "mutants"),  # drawing cases; judging outputs; planted defects of our kernels
    ("families",),  # behaviour shared by records of one kind
    ("infos",),  # the records, as data
    ("backends",),  # the packs' adapters
    ("harness",),  # the machinery: runner, plug-ins, pytest plugin
    ("probes", "tools"),  # GPU probes; the samplecheck command
    ("tests",),
)
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}
# The violations that remain (importer -> imported), each with its reason.
KNOWN: set[tuple[str, str]] = set()


def subpackage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def module_of(path: Path) -> str:
    folder, *rest = path.relative_to(ROOT).with_suffix("").parts
    rest = rest[:-1] if rest[-1] == "__init__" else rest
    return ".".join([FOLDERS[folder], *rest])


def arrows() -> set[tuple[str, str]]:
    """(importer, imported) subpackage pairs over every import statement of the package."""
    found = set()
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            importer = subpackage(module_of(path))
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
                elif isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                else:
                    continue
                for name in names:
                    imported = subpackage(name) if name.startswith("samplecheck.") else ""
                    if imported in RANK and importer in RANK and imported != importer:
                        found.add((importer, imported))
    return found


def violations(found: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """Arrows up the layers, and both arrows of two subpackages of one layer that import each
    other (between layers, the upward arrow of such a pair is the violation)."""
    up = {(a, b) for a, b in found if RANK[b] > RANK[a]}
    circle = {(a, b) for a, b in found if (b, a) in found and RANK[a] == RANK[b]}
    return up | circle


def test_every_subpackage_has_a_layer():
    packages = {p.name for p in (ROOT / "properties").iterdir() if (p / "__init__.py").is_file()}
    assert packages | {"kernels", "oracles"} <= set(RANK) | {"__pycache__"}, sorted(packages - set(RANK))


def test_imports_run_down_the_layers():
    found = violations(arrows())
    new = found - KNOWN
    assert not new, f"imports against the layer order (LAYERS): {sorted(new)}"
    gone = KNOWN - found
    assert not gone, f"no longer violated: remove from KNOWN {sorted(gone)}"
