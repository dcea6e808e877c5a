"""Issue 6's leads about FlashInfer 0.7.4, probed on the raw APIs (not our adapters):

    python -m properties.backends.flashinfer_leads_probe      (GPU with flashinfer installed)

Prints one markdown section per lead:
- **Ties at the k-th value**: probabilities [0.4, 0.3, 0.3, 0] with k = 2 (the tie at the
  k-th value admits a third id when ties are over-accepted): ids kept by the masking APIs, and
  draw frequencies of the sampling APIs over N_TIES repeated rows (keep-all-ties gives 0.4,
  0.3, 0.3; exactly-k by index never draws id 2).
- **Rows summing to less than 1**: 0.9 * softmax of a randn row (V = 64), drawn N_SUM times
  by each sampling API with its filter off; our sampling check (`properties.stats`, alpha
  1e-6) against the normalised row, and where the missing 10% of the uniform's range lands.
- **NaN rows**: a batch of 4 with row 1 all NaN, then row 1 holding one NaN entry, through
  each API in a fresh subprocess (an illegal memory access ends the process): what it raised or
  returned for row 1, whether rows 0, 2, 3 equal the same call without the NaN, and the
  `valid` flag where `return_valid=True` exists.
The V = 65536 / k = 256 switch is not probed: FlashInfer takes its `top_k_first` fast path
only for an int `top_k` (or a `top_k_max` bound), which needs the `topk` JIT module; it is not
prebuilt in the carried wheel and compiles for over 10 minutes (docs/backends.md).
"""

import subprocess
import sys

import torch

N_TIES = 20000
N_SUM = 100000
TIED = (0.4, 0.3, 0.3, 0.0)

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


def short_rows(out) -> None:
    from properties.stats import SamplingPlan, check_samples

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
        out(f"| {name} | {'REJECTED' if verdict.rejected else 'passes'} (G = {verdict.gtest.statistic:.0f}, "
            f"p = {verdict.gtest.pvalue:.2g}) | {worst}, {int(counts[worst])}, {float(expected[worst]):.0f} | "
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


def main() -> None:
    def out(text: str) -> None:
        print(text, end="", flush=True)

    ties(out)
    short_rows(out)
    nan_rows(out)


if __name__ == "__main__":
    main()
