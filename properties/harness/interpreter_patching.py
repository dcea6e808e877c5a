"""Helper calls under Triton's CPU interpreter without patching triton.language again, and its
numpy dtypes looked up once.

Triton's interpreter (`triton.runtime.interpreter`) swaps triton.language's builtins for
interpreted ones with `_patch_lang(fn)`: when a kernel launch starts (`GridExecutor.__call__`,
undone by the returned scope's `restore()` when the launch ends) and again on every call of a
`@triton.jit` helper from inside a kernel (`InterpretedFunction.__call__`, whose scope is
dropped). By then the launch has patched the language: the repeat finds every builtin already
swapped and sets the same attributes again, walking the members of triton.language, its tensor
class and math module each time (`inspect.getmembers`). Our kernels call their helpers inside
loops, so the repeats took about 40% of a CPU run of the selection kernels (33 of 81 s of
`test_strided_bitwise[top_k_top_p-triton-bf16-padded64]`, profiled).

`install()` replaces `_patch_lang` with one that, while a launch runs, returns an empty scope
for a helper whose view of the language (the triton.language modules among its globals, as
`_patch_lang` finds them: triton.language for our helpers, triton.language.core too for
Triton's own, such as `tl.sum`) was patched since the launch began, and patches as Triton does
in any other case. The kernels compute exactly as before: a repeat would set what is already
set (Triton never undoes a helper's patch), so the language in force during each helper call is
the same either way. It also replaces `_get_np_dtype`, which builds a table of every Triton dtype
on each call (about 8% of the same kind of run), with one that remembers each scalar type's
answer from Triton's own. samplecheck's plugin installs both for a CPU run of its own suite;
a Triton whose interpreter lacks `_patch_lang` or `_LangPatchScope` is left as it is (`install`
returns False), and one without `_get_np_dtype` keeps its lookups.
"""

import functools

_INSTALLED = "_samplecheck_patch_once"  # marks the replacement, so a second install is a no-op


def languages(fn) -> frozenset:
    """The triton.language modules visible from `fn`'s globals, the ones `_patch_lang(fn)` patches."""
    import triton.language as tl

    language, core = tl, tl.core
    return frozenset(value for value in fn.__globals__.values() if value is language or value is core)


def install() -> bool:
    """Replace the interpreter's `_patch_lang` (module docstring); False where this Triton has
    none to replace or no `_LangPatchScope`."""
    from triton.runtime import interpreter

    original = getattr(interpreter, "_patch_lang", None)
    empty_scope = getattr(interpreter, "_LangPatchScope", None)
    if original is None or empty_scope is None:
        return False
    if getattr(original, _INSTALLED, False):
        return True
    in_force = None  # the languages patched since the running launch began (None: no launch running)

    def patch_lang(fn):
        nonlocal in_force
        seen = languages(fn)
        if in_force is not None and seen <= in_force:
            return empty_scope()
        scope = original(fn)
        if in_force is not None:  # a helper's patch, whose scope Triton drops: in force to the launch's end
            in_force |= seen
            return scope
        in_force = seen  # a launch's patch: in force until its scope is restored
        restore = scope.restore

        def restore_and_end():
            nonlocal in_force
            try:
                restore()
            finally:
                in_force = None
        scope.restore = restore_and_end
        return scope

    setattr(patch_lang, _INSTALLED, True)
    patch_lang.__wrapped__ = original  # Triton's own, for a run without the replacement
    interpreter._patch_lang = patch_lang
    _remember_np_dtypes(interpreter)
    return True


def _remember_np_dtypes(interpreter) -> None:
    """Replace the interpreter's `_get_np_dtype` (where it has one) with one that asks Triton's
    own once per scalar type: a block's numpy dtype is its element type's. Pointer types (not
    hashable) go to Triton's own each time, which answers them first."""
    import triton.language as tl

    original = getattr(interpreter, "_get_np_dtype", None)
    if original is None or getattr(original, _INSTALLED, False):
        return
    of_scalar = functools.cache(original)

    def np_dtype(tt_dtype):
        scalar = tt_dtype.element_ty if isinstance(tt_dtype, tl.block_type) else tt_dtype
        return original(scalar) if isinstance(scalar, tl.pointer_type) else of_scalar(scalar)

    setattr(np_dtype, _INSTALLED, True)
    np_dtype.__wrapped__ = original
    interpreter._get_np_dtype = np_dtype
