"""allowed_token_ids / logit_bias / min_tokens: the oracle against hand-worked rows
(docs/backends.md, "logit_bias"), so that a kernel and an oracle sharing a misreading cannot
agree unnoticed, and the calls that must not launch anything leave the logits untouched
(where the backend implements them: its `accepts`)."""

import pytest
import torch

from samplecheck.families.token_lists import LogitBiasCase
from samplecheck.harness.runner import run
from samplecheck.inputs.drawing import skip_unless_accepted
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.oracles.logit_bias import logit_bias_reference
from samplecheck.registry.checks import assert_bitwise_equal

pytestmark = pytest.mark.interpreter

INF = float("inf")
ROW = [0.0, 1.0, 2.0, -INF, 4.0]


def _ids(*rows):
    return torch.tensor(rows, dtype=torch.int64)


@pytest.mark.parametrize("args, expected", [
    ({}, ROW),
    ({"allowed_token_ids": _ids([-1, -1])}, ROW),                                 # no ids: unrestricted
    ({"allowed_token_ids": _ids([4, 1, 4, -1])}, [-INF, 1.0, -INF, -INF, 4.0]),   # repeats are harmless
    ({"allowed_token_ids": _ids([3])}, [-INF] * 5),                               # only a -inf entry allowed
    ({"logit_bias_ids": _ids([2, 3, -1]), "logit_bias_values": torch.tensor([[-0.5, 9.0, INF]])},
     [0.0, 1.0, 1.5, -INF, 4.0]),                                                 # -inf + b; pad value ignored
    ({"allowed_token_ids": _ids([1]), "logit_bias_ids": _ids([1, 0]),
      "logit_bias_values": torch.tensor([[2.0, 5.0]])}, [-INF, 3.0, -INF, -INF, -INF]),  # bias after restore
    ({"stop_token_ids": _ids([4, 0]), "min_tokens": _ids(2), "output_len": _ids(1)},
     [-INF, 1.0, 2.0, -INF, -INF]),                                               # 1 < 2: masked
    ({"stop_token_ids": _ids([4, 0]), "min_tokens": _ids(2), "output_len": _ids(2)}, ROW),  # 2 < 2 is false
    ({"allowed_token_ids": _ids([4, 1]), "logit_bias_ids": _ids([4]), "logit_bias_values": torch.tensor([[1.0]]),
      "stop_token_ids": _ids([4]), "min_tokens": _ids(1), "output_len": _ids(0)},
     [-INF, 1.0, -INF, -INF, -INF]),                                              # stop mask after allowlist and bias
])
def test_logit_bias_oracle_rule(args, expected):
    args = {k: v.reshape(1, -1) if k.endswith("ids") or k == "logit_bias_values" else v.reshape(1)
            for k, v in args.items()}
    out = logit_bias_reference(torch.tensor([ROW]), **args)
    assert out.tolist() == [expected]


def test_logit_bias_oracle_rounds_once_from_fp32():
    """bf16 1.0 plus 2**-9 is a tie between 1.0 and 1 + 2**-7: even wins; 3 * 2**-9 rounds up;
    an fp16 sum above 65520 overflows to inf."""
    bf16 = torch.tensor([[1.0, 1.0]], dtype=torch.bfloat16)
    out = logit_bias_reference(bf16, logit_bias_ids=_ids([0, 1]), logit_bias_values=torch.tensor([[2**-9, 3 * 2**-9]]))
    assert out.float().tolist() == [[1.0, 1.0 + 2**-7]]
    fp16 = torch.tensor([[16.0]], dtype=torch.float16)
    assert logit_bias_reference(fp16, logit_bias_ids=_ids([0]), logit_bias_values=torch.tensor([[65504.0]])).item() == INF


@pytest.mark.parametrize("shape, args", [
    ((3, 5), {}),
    ((3, 5), {"allowed_token_ids": torch.empty(3, 0, dtype=torch.int64)}),
    ((3, 5), {"logit_bias_ids": torch.empty(3, 0, dtype=torch.int32), "logit_bias_values": torch.empty(3, 0)}),
    ((3, 5), {"stop_token_ids": torch.empty(3, 0, dtype=torch.int64), "min_tokens": _ids(1, 1, 1).flatten(),
              "output_len": _ids(0, 0, 0).flatten()}),
    ((0, 5), {"allowed_token_ids": torch.empty(0, 2, dtype=torch.int64)}),
    ((2, 0), {"allowed_token_ids": _ids([-1], [-1])}),
], ids=["nothing", "empty-allowed", "empty-bias", "empty-stops", "no-rows", "no-vocab"])
@pytest.mark.matrix(kernel="logit_bias", layouts=("contig",))
def test_logit_bias_no_op_calls(combo, shape, args, device):
    logits = torch.randn(shape, device=device).to(combo.dtype)
    args = {k: v.to(device) for k, v in args.items()}
    skip_unless_accepted(combo, LogitBiasCase(LogitsRecipe(*shape), None, None, None), "these lists", logits, args)
    before = logits.clone()
    run(combo, logits, args)
    assert_bitwise_equal(logits, before, f"{combo.id}: a call with nothing to apply")
