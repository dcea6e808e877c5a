"""What the CPU interpreter cannot catch in a kernel's source: a @triton.jit function may read
a module-level name only if it is a `tl.constexpr(...)` instance (or a function/module);
Triton's GPU compiler rejects any other global, the interpreter accepts it."""

import ast
from pathlib import Path

import pytest

import samplecheck.kernels

pytestmark = pytest.mark.interpreter

KERNELS = Path(samplecheck.kernels.__file__).parent


def _plain_globals(tree: ast.Module) -> set[str]:
    """Module-level names bound to anything but a `constexpr(...)` call."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            value = node.value
            constexpr = isinstance(value, ast.Call) and ast.unparse(value.func).endswith("constexpr")
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if not constexpr:  # tuple targets (`A, B = range(2)`) bind plain names too
                names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _jit_functions(tree: ast.Module):
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list):
            yield node


@pytest.mark.parametrize("path", sorted(KERNELS.rglob("*.py")), ids=lambda p: str(p.relative_to(KERNELS)))
def test_jit_functions_read_only_constexpr_globals(path):
    tree = ast.parse(path.read_text())
    plain = _plain_globals(tree)
    found = []
    for fn in _jit_functions(tree):
        local = {a.arg for a in fn.args.args} | {
            t.id for sub in ast.walk(fn) if isinstance(sub, (ast.Assign, ast.AugAssign, ast.For))
            for t in ast.walk(sub.targets[0] if isinstance(sub, ast.Assign) else sub.target)
            if isinstance(t, ast.Name)}
        found += [f"{path.name}:{n.lineno} {fn.name} reads {n.id}" for n in ast.walk(fn)
                  if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in plain and n.id not in local]
    assert not found, "globals a GPU compile rejects (make them tl.constexpr(...)): " + "; ".join(found)
