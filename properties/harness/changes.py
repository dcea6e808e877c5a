"""Which cells and mutants a change touches: the files changed since a git ref, mapped through
the registry to the (record, backend) pairs whose verdict they can change, for
`samplecheck gate --changed REF`.

A backend's files are the source files of the samplecheck modules that its verdict is
computed from, following imports (static, function-level ones included) from three roots:
its implementation (`Backend.target`'s module: our kernel, or a pack's adapter), its
record's declaration (`samplecheck.infos.<record>`, with the families, strategies and checks it
imports) and its record's oracle. A mutant's files are its kernel module's and the module
that declares it. A changed file that belongs to some backend or mutant selects those. A
changed test module that the registry does not parametrize (no `combo`, `error_case` or
`bad_input` argument, no `matrix` marker: a kernel's own tests) selects itself, run whole, and
the mutants whose patched module it imports. Any other changed file is framework (the harness,
the generic property tests, the packaging): it selects everything. Documentation and
benchmarks (IGNORED) select nothing.
"""

import ast
import fnmatch
import functools
import importlib
import importlib.util
import pkgutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "samplecheck"
# Files that cannot change a verdict: prose, benchmarks, their baselines.
IGNORED = ("*.md", "docs/*", "bench/*", "LICENSE")
TEST_MODULES = "tests/*test_*.py"
# What makes a test module judge registry cells: these arguments, or the `matrix` marker.
REGISTRY_ARGUMENTS = frozenset({"combo", "error_case", "bad_input"})


@dataclass(frozen=True)
class Scope:
    """What a change selects: `everything` (with the `reason`: the first framework file), or
    the `cells` ((record, backend) pairs) and `mutants` (names) it touches; both empty when
    the change touches no verdict."""

    everything: bool
    cells: frozenset[tuple[str, str]] = frozenset()
    mutants: frozenset[str] = frozenset()
    reason: str = ""
    tests: frozenset[str] = frozenset()  # test modules (node-id paths, tests/...) run whole

    def describe(self) -> str:
        if self.everything:
            return f"the whole gate ({self.reason})"
        if not self.cells and not self.mutants and not self.tests:
            return "nothing: no changed file can change a verdict"
        cells = ", ".join(f"{record}/{backend}" for record, backend in sorted(self.cells)) or "none"
        tests = f"; test modules {', '.join(sorted(self.tests))}" if self.tests else ""
        return f"cells {cells}{tests}; mutants {', '.join(sorted(self.mutants)) or 'none'}"


def changed_files(ref: str, root: Path) -> list[str]:
    """Paths (relative to the repository `root`) that differ between git ref `ref` and the
    working tree (committed, staged or not), plus untracked files git does not ignore."""
    def git(*args: str) -> list[str]:
        result = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
        if result.returncode != 0:
            raise ValueError(f"--changed {ref!r}: git {' '.join(args)} failed: {result.stderr.strip()}")
        return [line for line in result.stdout.splitlines() if line]
    return sorted(set(git("diff", "--name-only", ref, "--")) | set(git("ls-files", "--others", "--exclude-standard")))


def module_file(name: str, root: Path) -> str | None:
    """The source file of module `name` relative to `root`, or None (not found, or outside
    the checkout: an installed engine)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    path = Path(spec.origin).resolve()
    return str(path.relative_to(root.resolve())) if path.is_relative_to(root.resolve()) else None


@functools.cache
def _syntax_tree(file: Path) -> ast.Module:
    """The parsed source of `file`, read once per run."""
    return ast.parse(file.read_text())


def _imported(name: str, tree: ast.Module) -> set[str]:
    """The samplecheck modules a module's syntax tree imports (relative imports resolved against
    `name`); a `from M import X` names M and, where X is a submodule, M.X."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = name.rsplit(".", node.level)[0]
                base = f"{parent}.{base}" if base else parent
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return {module for module in found if module == PACKAGE or module.startswith(PACKAGE + ".")}


@functools.cache
def _module(name: str, root: Path) -> tuple[str | None, frozenset[str]]:
    """Module `name`'s checkout file (None: not in the checkout) and the samplecheck modules it
    imports; read once per run, however many closures pass through it."""
    path = module_file(name, root)
    return path, frozenset() if path is None else frozenset(_imported(name, _syntax_tree(root / path)))


def closure(roots: set[str], root: Path) -> set[str]:
    """The checkout files of the samplecheck modules `roots` import, transitively, with their own."""
    files, seen, queue = set(), set(), list(roots)
    while queue:
        name = queue.pop()
        if name in seen:
            continue
        seen.add(name)
        path, imported = _module(name, root)
        if path is not None:
            files.add(path)
            queue.extend(imported)
    return files


def backend_files(records: dict, root: Path) -> dict[tuple[str, str], set[str]]:
    """For every (record, backend) of `records`: the files its verdict is computed from."""
    found = {}
    for info in records.values():
        oracle = getattr(info.reference.function, "__module__", None)
        shared = closure({f"{PACKAGE}.infos.{info.name}", *([oracle] if oracle else [])}, root)
        for backend in info.backends:
            found[(info.name, backend.name)] = shared | closure({backend.target.partition(":")[0]}, root)
    return found


def mutant_files(root: Path) -> dict[str, set[str]]:
    """For every mutant: its kernel module's files and the file that declares it."""
    import samplecheck.mutants as package
    from samplecheck.mutants import MUTANTS

    declared = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = f"{package.__name__}.{info.name}"
        for mutant in importlib.import_module(module).MUTANTS:
            declared[mutant.name] = module_file(module, root)
    return {name: closure({m.entry_module}, root) | {declared.get(name)} - {None} for name, m in MUTANTS.items()}


def kernel_test_module(path: str, root: Path) -> bool:
    """Whether `path` is a test module the registry does not parametrize (module docstring)."""
    if not fnmatch.fnmatch(path, TEST_MODULES) or not (root / path).is_file():
        return False
    tree = _syntax_tree(root / path)
    arguments = {node.arg for node in ast.walk(tree) if isinstance(node, ast.arg)}
    marked = any(isinstance(node, ast.Attribute) and node.attr == "matrix" for node in ast.walk(tree))
    return not marked and not arguments & REGISTRY_ARGUMENTS


def imported_files(path: str, root: Path) -> set[str]:
    """The checkout files of the samplecheck modules the source file `path` imports, transitively."""
    return closure(_imported(PACKAGE, _syntax_tree(root / path)), root)


def scope(changed: list[str], records: dict, root: Path) -> Scope:
    """The cells, test modules and mutants the `changed` files touch (Scope.everything on a
    framework file)."""
    from samplecheck.mutants import MUTANTS

    cells_files = backend_files(records, root)
    mutants_files = mutant_files(root)
    cells, mutants, tests = set(), set(), set()
    for path in changed:
        if any(fnmatch.fnmatch(path, pattern) for pattern in IGNORED):
            continue
        hit_cells = {cell for cell, files in cells_files.items() if path in files}
        hit_mutants = {name for name, files in mutants_files.items() if path in files}
        if not hit_cells and not hit_mutants:
            if not kernel_test_module(path, root):
                return Scope(True, reason=f"{path} is framework")
            tests.add(path)
            reached = imported_files(path, root)
            hit_mutants = {name for name, m in MUTANTS.items() if module_file(m.module, root) in reached}
        cells |= hit_cells
        mutants |= hit_mutants
    return Scope(False, frozenset(cells), frozenset(mutants | _mutants_of(cells, records)), tests=frozenset(tests))


def _mutants_of(cells: set[tuple[str, str]], records: dict) -> set[str]:
    """The mutants of the kernel modules behind `cells`: a changed oracle or record re-hunts
    the mutants its properties must still kill."""
    from samplecheck.mutants import MUTANTS

    modules = {(record, backend.target.partition(":")[0]) for record, name in cells
               for backend in records[record].backends if backend.name == name}
    return {m.name for m in MUTANTS.values() if (m.kernel, m.entry_module) in modules}
