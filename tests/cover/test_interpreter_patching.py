"""samplecheck.harness.interpreter_patching: under the CPU interpreter a helper call does not
patch triton.language again while a launch runs, numpy dtypes are Triton's own, the kernels'
outputs are bit for bit those of Triton's own interpreter, and the language is left as Triton
leaves it."""

import pytest
import torch
import triton
import triton.language as tl
from triton.runtime import interpreter

from samplecheck.harness.interpreter_patching import install
from samplecheck.inputs.recipes import LogitsRecipe, materialize
from samplecheck.kernels.min_p import apply_min_p
from samplecheck.kernels.temperature import apply_temperature
from samplecheck.kernels.top_k_top_p import apply_top_k_top_p

pytestmark = pytest.mark.cpu_subject  # the interpreter is what it checks


@pytest.fixture
def counted(monkeypatch):
    """Calls of Triton's own `_patch_lang` behind a replacement installed for the test, by
    function name."""
    assert install()
    own = interpreter._patch_lang.__wrapped__
    names = []

    def counting(fn):
        names.append(fn.__name__)
        return own(fn)
    monkeypatch.setattr(interpreter, "_patch_lang", counting)
    assert install()
    return names


def _calls(device):
    """Outputs of kernels whose helpers are called in loops (top-k and top-p) and of two more, on
    bf16 rows of tied levels; as int16, for a bitwise comparison."""
    logits = materialize(LogitsRecipe(batch=6, vocab=1500, family="levels", scale=1.0, seed=10), torch.bfloat16,
                         device)
    k = torch.tensor([12, 40, 7, 100, 30, 3], device=device)
    p = torch.tensor([0.9, 0.5, 1.0, 0.3, 0.99, 0.7], device=device)
    outputs = (apply_top_k_top_p(logits.clone(), k, p), apply_top_k_top_p(logits.clone(), None, p),
               apply_min_p(apply_temperature(logits.clone(), torch.full((6,), 0.7, device=device)),
                           torch.full((6,), 0.05, device=device)))
    return [out.view(torch.int16) for out in outputs]


def test_a_launch_patches_once_and_each_new_view_once(device, counted):
    apply_top_k_top_p(torch.randn(3, 700, device=device), torch.tensor([5, 50, 2], device=device), None)
    # The launch (one kernel), then Triton's first own helper (its view adds triton.language.core),
    # and none of the helpers called after it.
    assert len(counted) == 2 and counted[0].endswith("_kernel") and not counted[1].endswith("_kernel"), counted


def test_outputs_equal_triton_own_patching(device, monkeypatch):
    assert install()
    ours = _calls(device)
    monkeypatch.setattr(interpreter, "_patch_lang", interpreter._patch_lang.__wrapped__)
    monkeypatch.setattr(interpreter, "_get_np_dtype", interpreter._get_np_dtype.__wrapped__)
    for mine, theirs in zip(ours, _calls(device), strict=True):
        assert torch.equal(mine, theirs)


@triton.jit
def _helper(x):
    return tl.sum(x, axis=0)


@triton.jit
def _failing_kernel(out_ptr, FAIL: tl.constexpr):
    total = _helper(tl.arange(0, 16))
    tl.static_assert(not FAIL, "planted failure")
    tl.store(out_ptr, total)


def test_the_language_is_restored_after_a_launch_that_raises(device, counted):
    out = torch.zeros(1, dtype=torch.int32, device=device)
    with pytest.raises(Exception, match="planted failure"):
        _failing_kernel[(1,)](out, FAIL=True)
    assert tl.core.is_builtin(tl.load) and tl.core.is_builtin(tl.tensor.__add__), "a launch left tl patched"
    counted.clear()
    _failing_kernel[(1,)](out, FAIL=False)
    assert out.item() == sum(range(16))
    assert counted[0] == "_failing_kernel" and len(counted) == 2, counted  # patched afresh, not skipped


@pytest.mark.parametrize("tt_dtype", [tl.float32, tl.bfloat16, tl.float16, tl.int1, tl.int32, tl.uint64,
                                      tl.pointer_type(tl.float32), tl.block_type(tl.bfloat16, [4]),
                                      tl.block_type(tl.pointer_type(tl.int64), [8])], ids=str)
def test_numpy_dtypes_are_triton_own(tt_dtype):
    assert install()
    own = interpreter._get_np_dtype.__wrapped__
    assert interpreter._get_np_dtype(tt_dtype) == own(tt_dtype)
    assert interpreter._get_np_dtype(tt_dtype) == own(tt_dtype)  # remembered


def test_install_is_idempotent_and_declines_an_unknown_interpreter(monkeypatch):
    assert install() and install()
    assert not hasattr(interpreter._patch_lang.__wrapped__, "__wrapped__"), "installed twice over itself"
    assert not hasattr(interpreter._get_np_dtype.__wrapped__, "__wrapped__"), "installed twice over itself"
    monkeypatch.delattr(interpreter, "_LangPatchScope")
    monkeypatch.setattr(interpreter, "_patch_lang", interpreter._patch_lang.__wrapped__)
    assert install() is False
