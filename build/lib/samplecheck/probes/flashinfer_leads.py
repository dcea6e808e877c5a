"""Issue 6's leads about FlashInfer 0.7.4, probed on the raw APIs (not our adapters):

    python -m samplecheck.probes.flashinfer_leads [SECTION ...]   (GPU with flashinfer)

SECTION: any of ties, short_rows, flat_bf16_row, nan_rows, fast_path (default: all, in that order).

Prints one markdown section per lead:
- **Ties at the k-th value**: probabilities [0.4, 0.3, 0.3, 0] with k = 2 (the tie at the
  k-th value admits a third id when ties are over-accepted): ids kept by the masking APIs, and
  draw frequencies of the sampling APIs over N_TIES repeated rows (keep-all-ties gives 0.4,
  0.3, 0.3; exactly-k by index never draws id 2).
- **Rows summing to less than 1**: 0.9 * softmax of a randn row (V = 64), drawn N_SUM times
  by each sampling API with its filter off; our sampling check (`samplecheck.judging.stats`, alpha
  1e-6) against the normalised row, and where the missing 10% of the uniform's range lands.
- **A flat bf16 row from logits**: V = FLAT_V equal bf16 logits, whose bf16 softmax sums to
  0.99645, drawn N_SUM times by the from-logits APIs (k = V, p = 1) and, as a control, by
  `sampling_from_logits` (which upcasts first): the last id's frequency against the others'
  mean, and our sampling check against the uniform law.
- **NaN rows**: a batch of 4 with row 1 all NaN, then row 1 holding one NaN entry, through
  each API in a fresh subprocess (an illegal memory access ends the process): what it raised or
  returned for row 1, whether rows 0, 2, 3 equal the same call without the NaN, and the
  `valid` flag where `return_valid=True` exists.
- **The V = 65536 / k = 256 switch**: `top_k_top_p_sampling_from_logits(filter_apply_order=
  "top_k_first")` at V = 65535 and 65536, top_k as an int (256 and 257), as a tensor, and as a
  tensor with `top_k_max = 256`: whether FlashInfer's fast path applies, how many of TIES_AT_K
  tied top logits get drawn at k = 256 (keep-all-ties draws all of them), the fraction of rows
  whose id equals the plain tensor call's with the same seed (the random stream), and our
  sampling check of one randn row (the plan's n draws) against its fp64 top-k law. The fast
  path needs FlashInfer's `topk` JIT module, which the carried wheel does not prebuild: build it
  with `scripts/build-flashinfer-topk.sh` (docs/backends.md). Without it (prebuilt or in the JIT
  cache) the section says so and stops, rather than compile for over 10 minutes.
"""

import subprocess
import sys

import torch

from samplecheck.judging.stats import SamplingPlan, check_samples

N_TIES = 20000
N_SUM = 100000
TIED = (0.4, 0.3, 0.3, 0.0)
# The V <= 2000 whose flat bf16 softmax falls furthest below 1 relative to one entry:
# 1994 * (1 - 1994 * bf16(1 / 1994)) = 7.07.
FLAT_V = 1994
TIES_AT_K = 300  # equal top logits, more than the k = 256 a fast-path call keeps

NAN_CHILD = r'''
import sys, torch, flashinfer.sampling as fs
api, kind = sys.argv[1], sys.argv[2]
B, V = 4, 4096
g = torch.Generator(device="cuda").manual_seed(0)
logits = torch.randn(B, V, generator=g, device="cuda")
poisoned = logits.clone()
if kind == "row":
    poisoned[1] = float("nan")
else:
    poisoned[1, 7] = float("nan")
k = torch.full((B,), 10, dtype=torch.int32, device="cuda")
p = torch.full((B,), 0.9, device="cuda")
probs_of = lambda x: torch.softmax(x, dim=-1)
seeded = dict(seed=1, offset=0)
calls = {
    "sampling_from_probs": lambda x: fs.sampling_from_probs(probs_of(x), return_valid=True, **seeded),
    "top_p_sampling_from_probs": lambda x: fs.top_p_sampling_from_probs(probs_of(x), p, return_valid=True, **seeded),
    "top_k_sampling_from_probs": lambda x: fs.top_k_sampling_from_probs(probs_of(x), k, return_valid=True, **seeded),
    "min_p_sampling_from_probs": lambda x: fs.min_p_sampling_from_probs(
        probs_of(x), torch.full((B,), 0.1, device="cuda"), return_valid=True, **seeded),
    "top_k_top_p_sampling_from_probs": lambda x: fs.top_k_top_p_sampling_from_probs(
        probs_of(x), k, p, return_valid=True, **seeded),
    "top_k_top_p_sampling_from_logits": lambda x: fs.top_k_top_p_sampling_from_logits(x, k, p, **seeded),
    "sampling_from_logits": lambda x: fs.sampling_from_logits(x, **seeded),
    "top_k_mask_logits": lambda x: fs.top_k_mask_logits(x, k),
    "top_k_renorm_probs": lambda x: fs.top_k_renorm_probs(probs_of(x), k, is_deterministic=True),
    "top_p_renorm_probs": lambda x: fs.top_p_renorm_probs(probs_of(x), p, is_deterministic=True),
}
call = calls[api]
try:
    got = call(poisoned); torch.cuda.synchronize()
except Exception as e:
    print(f"raised {type(e).__name__}: {str(e).splitlines()[0][:120]}"); sys.exit(0)
want = call(logits); torch.cuda.synchronize()
got_ids, valid = got if isinstance(got, tuple) else (got, None)
want_ids = want[0] if isinstance(want, tuple) else want
others = [0, 2, 3]
same = torch.equal(got_ids[others], want_ids[others])
row = got_ids[1]
if row.dim() == 0:
    shown = f"id {int(row)}" + ("" if 0 <= int(row) < V else " OUT OF RANGE")
else:
    shown = f"{int(torch.isnan(row).sum())} NaN, {int(torch.isfinite(row).sum())} finite of {V}"
flag = "-" if valid is None else str(bool(valid[1]))
print(f"{shown} | {'yes' if same else 'NO'} | {flag}")
'''


def _sampling():
    import flashinfer.sampling

    return flashinfer.sampling


def ties(out) -> None:
    fs = _sampling()
    probs = torch.tensor([TIED], device="cuda")
    k = torch.full((1,), 2, dtype=torch.int32, device="cuda")
    kept_mask = int(torch.isfinite(fs.top_k_mask_logits(probs.log(), k)).sum())
    kept_renorm = int((fs.top_k_renorm_probs(probs, k, is_deterministic=True) > 0).sum())
    out(f"## Ties at the k-th value: probabilities {list(TIED)}, k = 2\n")
    out(f"- `top_k_mask_logits`: {kept_mask} ids kept; `top_k_renorm_probs`: {kept_renorm} ids kept\n")
    rows = probs.expand(N_TIES, -1).contiguous()
    ks = k.expand(N_TIES).contiguous()
    ones = torch.ones(N_TIES, device="cuda")
    samplers = {
        "top_k_sampling_from_probs": lambda: fs.top_k_sampling_from_probs(rows, ks, seed=0, offset=0),
        "top_k_top_p_sampling_from_probs (top_k_first, p = 1)": lambda: fs.top_k_top_p_sampling_from_probs(
            rows, ks, ones, filter_apply_order="top_k_first", seed=0, offset=0),
        "top_k_top_p_sampling_from_probs (joint, p = 1)": lambda: fs.top_k_top_p_sampling_from_probs(
            rows, ks, ones, filter_apply_order="joint", seed=0, offset=0),
        "top_k_top_p_sampling_from_logits (joint, p = 1)": lambda: fs.top_k_top_p_sampling_from_logits(
            rows.log(), ks, ones, filter_apply_order="joint", seed=0, offset=0),
    }
    out(f"\n| API | frequency of ids 0, 1, 2, 3 over {N_TIES} draws |\n|---|---|\n")
    for name, draw in samplers.items():
        counts = torch.bincount(draw().long(), minlength=len(TIED)).double() / N_TIES
        out(f"| {name} | {', '.join(f'{c:.4f}' for c in counts.tolist())} |\n")


def _verdict(verdict) -> str:
    """Our sampling check's outcome, with the G-test's and the excess test's p-values."""
    outcome = f"REJECTED ({verdict.fired})" if verdict.rejected else "passes"
    return f"{outcome}: G p = {verdict.gtest.pvalue:.2g}, excess p = {verdict.excess.pvalue:.2g}"


def short_rows(out) -> None:
    fs = _sampling()
    gen = torch.Generator(device="cuda").manual_seed(0)
    law = torch.softmax(torch.randn(1, 64, generator=gen, device="cuda", dtype=torch.float64), dim=-1)
    rows = (0.9 * law).float().expand(N_SUM, -1).contiguous()
    vocab = law.size(1)
    samplers = {
        "sampling_from_probs": lambda: fs.sampling_from_probs(rows, seed=0, offset=0),
        "top_p_sampling_from_probs (p = 1)": lambda: fs.top_p_sampling_from_probs(
            rows, torch.ones(N_SUM, device="cuda"), seed=0, offset=0),
        "top_k_sampling_from_probs (k = V)": lambda: fs.top_k_sampling_from_probs(
            rows, torch.full((N_SUM,), vocab, dtype=torch.int32, device="cuda"), seed=0, offset=0),
        "min_p_sampling_from_probs (min_p = 0)": lambda: fs.min_p_sampling_from_probs(
            rows, torch.zeros(N_SUM, device="cuda"), seed=0, offset=0),
    }
    plan = SamplingPlan(alpha=1e-6)
    out(f"\n## Rows summing to 0.9 (V = {vocab}, {N_SUM} draws, law: the normalised row)\n\n")
    out("| API | our check | largest excess: id, observed, expected | id V-1 observed, expected |\n|---|---|---|---|\n")
    for name, draw in samplers.items():
        counts = torch.bincount(draw().long(), minlength=vocab).double()
        verdict = check_samples(counts, law[0], law[0] > 0, law[0] > 0, plan)
        expected = law[0] * N_SUM
        worst = int((counts - expected).argmax())
        out(f"| {name} | {_verdict(verdict)} | {worst}, {int(counts[worst])}, {float(expected[worst]):.0f} | "
            f"{int(counts[-1])}, {float(expected[-1]):.0f} |\n")


def nan_rows(out) -> None:
    apis = ("sampling_from_probs", "top_p_sampling_from_probs", "top_k_sampling_from_probs",
            "min_p_sampling_from_probs", "top_k_top_p_sampling_from_probs", "top_k_top_p_sampling_from_logits",
            "sampling_from_logits", "top_k_mask_logits", "top_k_renorm_probs", "top_p_renorm_probs")
    out("\n## NaN rows (B = 4, V = 4096; row 1 poisoned)\n\n")
    out("| API | poison | row 1 | rows 0, 2, 3 as without the NaN | valid[1] |\n|---|---|---|---|---|\n")
    for api in apis:
        for kind in ("row", "entry"):
            r = subprocess.run([sys.executable, "-c", NAN_CHILD, api, kind], capture_output=True, text=True,
                               timeout=300)
            line = (r.stdout.strip().splitlines() or [""])[-1]
            if r.returncode != 0:
                line = f"process died (rc {r.returncode}): {(r.stderr.strip().splitlines() or [''])[-1][:120]} | - | -"
            elif line.startswith("raised"):
                line += " | - | -"
            out(f"| {api} | {'all NaN' if kind == 'row' else 'one NaN'} | {line} |\n")


def flat_bf16_row(out) -> None:
    fs = _sampling()
    logits = torch.zeros(N_SUM, FLAT_V, dtype=torch.bfloat16, device="cuda")
    total = float(torch.softmax(logits[0], dim=-1).float().sum())
    k = torch.full((N_SUM,), FLAT_V, dtype=torch.int32, device="cuda")
    ones = torch.ones(N_SUM, device="cuda")
    samplers = {
        f"top_k_top_p_sampling_from_logits ({order}, k = V, p = 1)": lambda order=order: (
            fs.top_k_top_p_sampling_from_logits(logits, k, ones, filter_apply_order=order, seed=0, offset=0))
        for order in ("joint", "top_k_first")
    }
    samplers["sampling_from_logits (control)"] = lambda: fs.sampling_from_logits(logits, seed=0, offset=0)
    law = torch.full((FLAT_V,), 1.0 / FLAT_V, dtype=torch.float64, device="cuda")
    plan = SamplingPlan(alpha=1e-6)
    out(f"\n## A flat bf16 row from logits (V = {FLAT_V}, bf16 softmax sums to {total:.6f}; {N_SUM} draws)\n\n")
    out("| API | our check against the uniform law | last id's count / the others' mean |\n|---|---|---|\n")
    for name, draw in samplers.items():
        counts = torch.bincount(draw().long(), minlength=FLAT_V).double()
        verdict = check_samples(counts, law, law > 0, law > 0, plan)
        ratio = float(counts[-1] / counts[:-1].mean())
        out(f"| {name} | {_verdict(verdict)} | {ratio:.2f} |\n")


FAST_PATH_CALLS = (("int 256", 256, None), ("int 257", 257, None), ("tensor 256", "tensor", None),
                   ("tensor 256, top_k_max 256", "tensor", 256))


def _k(x, top_k):
    """The top_k argument: an int as given, or "tensor": 256 per row of `x`, int32."""
    return torch.full((x.size(0),), 256, dtype=torch.int32, device="cuda") if top_k == "tensor" else top_k


def _top_k_first(x, top_k, bound):
    """top_k_top_p_sampling_from_logits, top_k_first, p = 1, seed 0, top_k by `_k`, with `bound`
    passed as top_k_max when not None."""
    extra = {} if bound is None else {"top_k_max": bound}
    return _sampling().top_k_top_p_sampling_from_logits(
        x, _k(x, top_k), torch.ones(x.size(0), device="cuda"), filter_apply_order="top_k_first", seed=0, offset=0,
        **extra).long()


def fast_path(out) -> None:
    from flashinfer.jit.topk import gen_topk_module

    from samplecheck.oracles.top_k_top_p import top_k_top_p_reference

    plan = SamplingPlan(alpha=1e-6)
    out("\n## The top_k_first fast path: V = 65536, k <= 256 (top_k_top_p_sampling_from_logits, p = 1)\n\n")
    spec = gen_topk_module()
    if not (spec.aot_path.exists() or spec.jit_library_path.exists()):
        out(f"Not probed: FlashInfer's topk module is neither at {spec.aot_path} nor in the JIT cache "
            "(scripts/build-flashinfer-topk.sh builds it).\n")
        return
    out(f"| V | top_k | fast path | tied ids drawn (of {TIES_AT_K}; {N_TIES} draws) | rows with the plain tensor "
        f"call's id (64 randn rows) | our check, one randn row ({plan.samples} draws) |\n|---|---|---|---|---|---|\n")
    gen = torch.Generator(device="cuda").manual_seed(0)
    for vocab in (65535, 65536):
        tied = torch.randn(N_TIES, vocab, generator=gen, device="cuda") - 10
        tied[:, :TIES_AT_K] = 5.0
        rand = torch.randn(64, vocab, generator=gen, device="cuda")
        repeated = rand[:1].expand(plan.samples, -1).contiguous()
        for label, top_k, bound in FAST_PATH_CALLS:
            applies = _sampling()._top_k_first_fast_path_applicable(tied, _k(tied, top_k), None, bound)
            try:
                drawn = int(torch.unique(_top_k_first(tied, top_k, bound)).numel())
                same = float((_top_k_first(rand, top_k, bound) == _top_k_first(rand, "tensor", None)).double().mean())
                law_k = top_k if isinstance(top_k, int) else 256
                kept = top_k_top_p_reference(rand[:1].cpu(), torch.tensor([law_k]), None, band=0.0).kept[0]
                law = torch.softmax(rand[0].cpu().double().masked_fill(~kept, float("-inf")), dim=-1)
                counts = torch.bincount(_top_k_first(repeated, top_k, bound), minlength=vocab).cpu()
                verdict = _verdict(check_samples(counts, law, law > 0, law > 0, plan))
                out(f"| {vocab} | {label} | {'yes' if applies else 'no'} | {drawn} | {same:.2f} | {verdict} |\n")
            except Exception as e:  # a missing or failing JIT module ends the row, not the probe
                out(f"| {vocab} | {label} | {'yes' if applies else 'no'} | raised {type(e).__name__}: "
                    f"{str(e).splitlines()[0][:100]} | - | - |\n")


SECTIONS = {"ties": ties, "short_rows": short_rows, "flat_bf16_row": flat_bf16_row, "nan_rows": nan_rows,
            "fast_path": fast_path}


def main() -> None:
    def out(text: str) -> None:
        print(text, end="", flush=True)

    for name in sys.argv[1:] or SECTIONS:
        SECTIONS[name](out)


if __name__ == "__main__":
    main()
