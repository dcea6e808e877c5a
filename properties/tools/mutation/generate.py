"""Mutants generated mechanically from our kernel modules, as `samplecheck.mutants.Mutant`s.

Each kernel module with a registered `triton` backend is parsed; the code reachable from the
backend's entry point (the entry function, the module functions it names, transitively, and
the module's top-level assignments such as block sizes) is walked, and every operator of
`samplecheck.tools.mutation.operators` proposes replacements for its nodes. So is each helper
module of the kernel package that such a module imports, directly or through other helpers
(the cut search, the split paths, the guard, ...): from the names its importer takes from it
and uses in code the entry point reaches (`helpers`; the definitions those reach,
transitively), once per importer, the mutant reaching the entry point through that importer
(`Mutant.via`). A module that is another backend's entry module
is that backend's target, not a helper (the sampler's pipeline imports every op). A replacement
becomes a source patch (find the node's lines, replace them with the node unparsed in
place), widened by neighbouring lines until `find` occurs exactly once, as the mutant
machinery requires. Kept are the patches that parse, change the module's syntax tree (not
just its formatting), differ from every other kept mutant's tree and import.

A mutant's name is `KERNEL-OPERATOR-HASH`, the hash of its module, patch and `via`: it stays
the same while the patched lines do, so recorded dispositions follow it across runs.
"""

import ast
import functools
import hashlib
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from samplecheck import mutants as machinery
from samplecheck.mutants import Mutant
from samplecheck.tools.mutation.operators import ALL, OPERATORS, reorder

KERNEL_PACKAGE = "samplecheck.kernels."
DEVICES = ("cpu", "cuda")
# Modules whose code runs on some devices alone: their mutants change behaviour only there.
MODULE_DEVICES = {
    "samplecheck.kernels.launching": ("cuda",),  # under the interpreter its `jit` is triton.jit's own
}
ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)


@dataclass(frozen=True)
class Target:
    """A kernel module under mutation, for the registry record `kernel` whose backend calls
    `entry` (module docstring)."""

    kernel: str
    module: str
    entry: str
    # A helper module's importer, then the modules on to the one holding `entry` (as `Mutant.via`);
    # empty for the entry module itself.
    via: tuple[str, ...] = ()
    # A helper's names that its importer takes and uses in code the entry point reaches: where
    # mutation starts in it (an entry module's start is `entry` and every top-level assignment).
    roots: tuple[str, ...] = ()


def targets() -> list[Target]:
    """Our Triton kernels: every registered backend named `triton` in samplecheck.kernels, each
    followed by the helper modules it imports (`helpers`)."""
    from samplecheck.harness.plugins import register_all
    from samplecheck.registry.matrix import REGISTRY

    if not REGISTRY:
        register_all()
    entries = [Target(info.name, module, entry) for info in REGISTRY.values() for backend in info.backends
               for module, _, entry in [backend.target.partition(":")]
               if backend.name == "triton" and module.startswith(KERNEL_PACKAGE)]
    entry_modules = {t.module for t in entries}
    return [found for t in entries for found in (t, *helpers(t, entry_modules))]


@functools.cache
def _module_tree(module: str) -> ast.Module:
    return ast.parse(Path(importlib.util.find_spec(module).origin).read_text())


def _kernel_imports(module: str) -> dict[str, tuple[str, ...]]:
    """The kernel-package modules `module` imports names from (`from ... import ...` at any
    level), with those names."""
    imports: dict[str, tuple[str, ...]] = {}
    for node in ast.walk(_module_tree(module)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(KERNEL_PACKAGE):
            imports[node.module] = imports.get(node.module, ()) + tuple(a.name for a in node.names)
    return imports


def _used(module: str, target: Target, roots: set[str]) -> set[str]:
    """The names the code of `module` that `target`'s entry point reaches uses: from its entry
    (`target`'s own module) or from `roots` (a helper's names its importers use)."""
    tree = _module_tree(module)
    reached = _roots(tree, target) if module == target.module else _reached(tree, tuple(sorted(roots)))
    return {n.id for node in reached for n in ast.walk(node) if isinstance(n, ast.Name)}


def helpers(target: Target, entry_modules: set[str]) -> list[Target]:
    """A target per (helper module, importer) that `target`'s entry point reaches through
    kernel-package imports, none through or into another target's entry module. Its roots are
    the names the importer takes from the helper and uses in code the entry point reaches (over
    every importer's reach, to a fixed point), so code no path of the entry point runs is not
    mutated; its `via`, the importer's chain to the entry module first found breadth first."""
    chain = {target.module: (target.module,)}  # module -> itself, then the importers up to the entry module
    roots: dict[str, set[str]] = {target.module: set()}
    todo = [target.module]
    while todo:
        importer = todo.pop(0)
        used = _used(importer, target, roots[importer])
        for helper, names in _kernel_imports(importer).items():
            wanted = set(names) & used
            if helper in entry_modules or wanted <= roots.get(helper, set()):
                continue
            roots[helper] = roots.get(helper, set()) | wanted
            chain.setdefault(helper, (helper, *chain[importer]))
            todo.append(helper)
    found = []
    for importer in chain:
        used = _used(importer, target, roots[importer])
        found += [Target(target.kernel, helper, target.entry, via=chain[importer],
                         roots=tuple(n for n in names if n in used))
                  for helper, names in _kernel_imports(importer).items()
                  if helper not in entry_modules and used.intersection(names)]
    return found


def _reached(tree: ast.Module, names: tuple[str, ...]) -> list[ast.stmt]:
    """The module's top-level definitions (functions, classes, assignments to a name) that
    `names` reach by name, transitively, in source order."""
    defined = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined[node.name] = node
        elif isinstance(node, ast.Assign):
            defined.update((name.id, node) for name in node.targets if isinstance(name, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defined[node.target.id] = node
    seen, todo = [], list(names)
    while todo:
        node = defined.get(todo.pop())
        if node is not None and node not in seen:
            seen.append(node)
            todo += [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
    return sorted(seen, key=lambda n: n.lineno)


def _roots(tree: ast.Module, target: Target) -> list[ast.stmt]:
    """Where mutation starts in `target`'s module (the `Target.roots` field's contract)."""
    if target.via:
        return _reached(tree, target.roots)
    assignments = [n for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))]
    return assignments + [n for n in _reached(tree, (target.entry,)) if isinstance(n, ast.FunctionDef)]


def _executable(node: ast.AST) -> Iterator[ast.AST]:
    """`node` and its descendants that run as code: no docstrings, decorators, signatures,
    annotations, f-string contents or raise statements (error wording only)."""
    if isinstance(node, (ast.JoinedStr, ast.Raise)):
        return
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
        return
    yield node
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        children = node.body
    elif isinstance(node, ast.AnnAssign):
        children = [node.target] + ([node.value] if node.value else [])
    else:
        children = list(ast.iter_child_nodes(node))
    for child in children:
        yield from _executable(child)


class Source:
    """A module's text with byte-offset splicing (AST columns count UTF-8 bytes)."""

    def __init__(self, text: str):
        self.text = text
        self.data = text.encode()
        self.line_starts = [0]
        for line in self.data.splitlines(keepends=True):
            self.line_starts.append(self.line_starts[-1] + len(line))

    def offset(self, line: int, col: int) -> int:
        return self.line_starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)

    def segment(self, start: int, end: int) -> str:
        return self.data[start:end].decode()

    def patch(self, start: int, end: int, text: str) -> tuple[str, str]:
        """(find, replace): the whole lines around [start, end), widened until `find` is unique."""
        first = self.data.rfind(b"\n", 0, start) + 1
        last = self.data.find(b"\n", end)
        last = len(self.data) if last < 0 else last
        while True:
            find = self.segment(first, last)
            if self.text.count(find) == 1 or (first == 0 and last == len(self.data)):
                break
            first = self.data.rfind(b"\n", 0, max(first - 1, 0)) + 1
            later = self.data.find(b"\n", last + 1)
            last = len(self.data) if later < 0 else later
        return find, self.segment(first, start) + text + self.segment(end, last)


def _unparsed(node: ast.AST) -> str:
    text = ast.unparse(node)
    atom = isinstance(node, ATOMS) or isinstance(node, ast.Constant) and not text.startswith("-")
    return text if atom else f"({text})"


def _device_entries(tree: ast.Module) -> dict[int, str]:
    """id(node) -> device, for the nodes of per-device settings ({"cpu": ..., "cuda": ...}):
    mutating them changes behaviour on that device alone."""
    devices = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value in DEVICES:
                    devices.update((id(n), key.value) for n in ast.walk(value))
    return devices


def _edits(tree: ast.Module, source: Source, roots: list[ast.stmt], operators: tuple[str, ...],
           devices: tuple[str, ...]) -> Iterator[tuple[str, int, str, int, int, str, tuple[str, ...]]]:
    """(operator, line, description, start, end, new text, devices) for every proposed replacement
    in the code of `roots`, in a module whose code runs on `devices`."""
    per_device = _device_entries(tree)
    for root in roots:
        for node in _executable(root):
            for name in operators:
                if name in OPERATORS:
                    where = (per_device[id(node)],) if id(node) in per_device else devices
                    for new, what in OPERATORS[name](node):
                        start, end = source.span(node)
                        yield name, node.lineno, what, start, end, _unparsed(new), where
            if "reorder" in operators:
                for field in ("body", "orelse"):
                    body = getattr(node, field, None)
                    for first, second, what in reorder(body if isinstance(body, list) else []):
                        (start, mid), (mid2, end) = source.span(first), source.span(second)
                        text = source.segment(mid2, end) + source.segment(mid, mid2) + source.segment(start, mid)
                        yield "reorder", first.lineno, what, start, end, text, devices


def generate(target: Target, operators: tuple[str, ...] = ALL) -> list[Mutant]:
    """The distinct, parseable mutants of `target`'s module (not yet import-checked)."""
    path = Path(importlib.util.find_spec(target.module).origin)
    text = path.read_text()
    tree = ast.parse(text)
    source = Source(text)
    seen = {ast.dump(tree)}
    found = []
    through = "".join(f" via {module.rsplit('.', 1)[-1]}" for module in target.via[:1])
    runs_on = MODULE_DEVICES.get(target.module, DEVICES)
    for operator, line, what, start, end, new, devices in _edits(tree, source, _roots(tree, target), operators, runs_on):
        patched = source.segment(0, start) + new + source.segment(end, len(source.data))
        try:
            dump = ast.dump(ast.parse(patched))
        except SyntaxError:
            continue
        if dump in seen:
            continue
        seen.add(dump)
        find, replace = source.patch(start, end, new)
        key = "\0".join((target.module, find, replace, *target.via))
        digest = hashlib.sha1(key.encode()).hexdigest()[:8]
        found.append(Mutant(
            name=f"{target.kernel}-{operator}-{digest}", kernel=target.kernel, module=target.module,
            entry=target.entry, find=find, replace=replace,
            description=f"{operator}: {what} ({path.name}:{line}{through})", ref="generated by samplecheck mutate",
            devices=devices, via=target.via))
    return found


def importable(mutant: Mutant) -> str | None:
    """None when the patched module imports (through the mutant machinery), else the error."""
    machinery.MUTANTS[mutant.name] = mutant
    try:
        machinery.load(mutant.name)
    except Exception as err:  # noqa: BLE001 (any error of the patched module's top level)
        del machinery.MUTANTS[mutant.name]
        return f"{type(err).__name__}: {err}"
    return None
