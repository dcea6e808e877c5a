"""Triton top-k then top-p masking, in place, with the keep-all-ties policy.

Contract (the oracle `samplecheck.oracles.top_k_top_p` states the semantics in full):
- `logits` [B, V] fp32/bf16/fp16, any row stride, column stride 1. Loads upcast to fp32;
  no fp32 copy is made. Masked entries are set to -inf in place; kept entries and the
  row-stride gaps are never written.
- `k` [B] int32/int64 or None: k <= 0 or k >= V turns top-k off for that row.
- `p` [B] float32 or None, in (0, 1]: p == 1 turns top-p off for that row.
- Top-p applies after top-k, on the renormalised survivors.
- Non-finite entries (docs/backends.md, "Edge values"): in a row where top-k or top-p is
  on, NaN reads as -inf (it never counts towards k nor carries mass) and is always dropped
  (set to -inf); +inf entries rank above every finite one, and when the survivors hold
  +inf, top-p keeps exactly the +inf entries (they hold all the mass). Rows with both off
  are untouched, NaN included.
- Values (`samplecheck.kernels.validation.values_checked`): deferred or captured, the
  kernel checks k >= -1 and p in (0, 1] itself (every program reads all B values, so a
  bad value anywhere makes every row write nothing; program 0 sets the guard flag's bits):
  one launch per call. Unchecked, k < -1 acts as off and p outside (0, 1] gives an
  unspecified mask of the row (never out of bounds).
- Scratch: each call allocates a [B, 2 * CAP] fp32 buffer (CAP from LAUNCH_CONFIG: 8 KiB a
  row on a GPU) for the candidates described below and their columns, or the one buffer of
  the path the call takes (`scratch_bytes`); nothing is cached between calls.
- Paths: a small batch with p and no k (`samplecheck.kernels.top_k_top_p_split.split_plan`)
  splits each row over several programs and five launches; a small batch with k (with or
  without p; `samplecheck.kernels.top_k_chunks.chunks_plan`) splits each row over chunk
  programs in one launch; a larger batch with k and no p
  (`samplecheck.kernels.top_k_split.k_split_plan`) splits each row over chunk programs and four
  launches; every other call is one launch, one program per row, as described
  below (`samplecheck.kernels.cut_search.row_cut`). All find the same cut, so the masks are
  equal.

Algorithm, per row (one program), no sort of the row. Every fp32 value maps to an int32
key with the same order. The kept set is always {x : key(x) >= c} for a cut key c, the
smallest key at which a monotone predicate holds:
- top-k: #(key > c) < k;
- top-p: mass(key > c) < p * mass(top-k survivors), mass = sum of exp(x - row max).
Each cut lies in a bracket [lo, hi] of keys, hi = the row max's key. An entry at -inf stays
-inf whatever the cut, so no bracket reaches below the row's smallest key above -inf, and where
the predicate's cut is below that key (fewer than k entries above -inf), the cut is that key:
the same mask, found in the first candidate pass (a bracket down to -inf would hold every -inf
entry and take a full-row search step per 4 bits of the key).
1. Pass 1 reads the row max, the smallest key above -inf and the lane maxima (lane j sees the
   columns j mod BLOCK; merged to LANES lanes of adjacent columns).
2. Lower bounds raise lo. Top-k with k <= LANES: the lane maxima are distinct entries, so
   the k-th largest of them is <= the cut; BOUND_STEPS NUM_PIVOTS-ary search steps over
   them (in registers) give a key at or below it. Top-p: the entries below
   max - ln(V / (1 - p)) - 1 hold less than (1 - p) of the survivors' mass, so they are
   all masked.
3. Candidates: one pass copies the entries with key in [lo, hi] to the row's scratch in
   column order (positions from cumsums) and counts them, writes -inf at the entries below
   lo and at NaN (the cut is at or above lo) and stores the candidates' columns; the top-p
   stage's pass also weighs the survivors. If more than
   CAP fall in the bracket, search steps over the whole row (one pass each, counting and
   weighing the entries above NUM_PIVOTS pivots in [NUM_PIVOTS, TILE] compare tiles, and
   summing the survivors' mass) shrink it until it is one key or holds at most CAP
   entries, which are then copied.
   The top-p stage reads SAMPLE entries first (columns (i * V) // SAMPLE). When more than
   CAP / 2 of the row's entries lie in its bracket by the sample's count, it skips the
   candidate pass and its first search step takes its pivots from the sample, sorted in
   registers: around the entry where the sample's own mass reaches p, at spacings
   growing from about CAP / 2 expected entries. Later steps spread the pivots evenly over
   the bracket. The sample only places pivots: every pivot is checked against the whole
   row, so the cut does not depend on it.
4. The cut is the smallest candidate key at which the predicate holds. On a GPU it is fixed
   4 bits at a time from the top: a step counts (and weighs) the candidates that share the bits
   fixed so far by their next digit, and takes the smallest digit whose largest entry holds
   (`samplecheck.kernels.cut_search.digit_cut`); the interpreter compares every candidate with
   every other in [RANK_ROWS, RANK_COLS] tiles. Top-p reuses the top-k candidates when they
   hold every top-k survivor.
5. Where the last candidate pass's candidates fit the scratch and reach above the cut (its
   bracket held every entry from the cut up, or its hi is the cut's stage's own), -inf is
   written at the candidates below the cut, by their columns; else a last pass writes -inf
   below the cut and at NaN.
With k = 50 that is two passes over the row (max; candidates and -inf below lo) and a digit
selection over the candidates; top-p alone with a tight bound takes two as well; on a flat row
a search step more (a second step when the sample's guess misses).

Exactness and determinism: masses are sums of exp(x - max) in 2**-40 fixed point (int64).
Integer sums are exact in any order, so the cut depends neither on the summation order
(hence not on the row stride, the launch parameters or which path found it) nor on the
layouts Triton picks; the truncation costs < V * 2**-40 of the mass (< 3e-7 for
V <= 2**18), and a GPU's fp32 `tl.exp` up to 64 ulp of each weight (3.8e-6 relative: ex2 of an
fp32-rounded x * log2(e), docs/design.md), both inside the oracle's 1e-5 top-p band. Counts and key compares are exact.
row_stride and V are specialized on divisibility by 16 so that aligned rows move as
16-byte vectors; V == 1 is specialized to a constant; B (read only by the value checks) is
not specialized.
"""

import torch
import triton.language as tl

from samplecheck.kernels.cut_search import row_cut, write_cut
from samplecheck.kernels.guard import guard_pointer
from samplecheck.kernels.launching import jit
from samplecheck.kernels.row_params import may_write, row_k_p
from samplecheck.kernels.runtime import check_launchable, device_kind
from samplecheck.kernels.top_k_chunks import chunks_buffer_bytes, chunks_plan, launch_chunks
from samplecheck.kernels.top_k_split import k_split_buffer_bytes, k_split_plan, launch_k_split
from samplecheck.kernels.top_k_top_p_split import launch_split, split_buffer_bytes, split_plan
from samplecheck.kernels.validation import check_top_k_top_p

# Launch parameters by device. BLOCK: columns per step of the streaming passes (max,
# candidates, write), NUM_STAGES: their software pipelining depth; LANES: lane maxima kept
# for the top-k bound; TILE and NUM_PIVOTS: the compare tile of a full-row search step;
# CAP: scratch entries per row (a power of two); RANK_ROWS x RANK_COLS: the candidates'
# compare tile (`cut_search.rank_cut`), or 0 x 0 to fix the cut a digit at a time
# (`cut_search.digit_cut`; on an H100 the compare tiles took top-p alone at 256 x 32000 from
# 173.6 to 330.6 us, docs/benchmarks-2026-12-05-to-06.md, session 39); SAMPLE: the entries
# sampled to place the first passes (a power of two). On a GPU the tiles must fit in registers
# (at most 128 a thread at 8 warps, 2 programs per SM). The CPU interpreter pays per operation,
# not per element: it takes wide tiles, compare tiles for the candidates (it runs a row's digit
# steps 2-4x slower; tests/cover/test_digit_cut.py and test_cut_rankings.py check the digits
# there), and a small CAP so that its small rows exercise both the candidate and the full-row
# search. The result depends on none of these.
LAUNCH_CONFIG = {
    "cuda": dict(BLOCK=2048, NUM_STAGES=3, LANES=512, BOUND_STEPS=3, TILE=256, NUM_PIVOTS=16, CAP=1024,
                 RANK_ROWS=0, RANK_COLS=0, SAMPLE=1024, num_warps=8),
    "cpu": dict(BLOCK=4096, NUM_STAGES=1, LANES=1024, BOUND_STEPS=2, TILE=4096, NUM_PIVOTS=256, CAP=256,
                RANK_ROWS=128, RANK_COLS=128, SAMPLE=32),
}

# Top-p alone on at most `rows` rows (one program per row, at most about one per SM): wider
# programs and compare tiles. H200, bf16 V = 151936, p = 0.9 (docs/gpu-runs-2026-12-04.md, session 28):
# 16-128 rows 624-664 -> 459-484 us; slower from 256 rows (1024: 3683 -> 3835 us).
WIDE_TOP_P = {"cuda": dict(rows=128, TILE=512, num_warps=16), "cpu": None}


# `guarded` is a runtime bool: a guarded and an unguarded call share a compiled kernel.
@jit(do_not_specialize=["k_ptr", "p_ptr", "B", "guard_ptr", "guarded"])
def _top_k_top_p_kernel(logits_ptr, row_stride, k_ptr, p_ptr, scratch_ptr, B, V, guard_ptr, check, guarded,
                        HAS_K: tl.constexpr, HAS_P: tl.constexpr,
                        BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr, LANES: tl.constexpr,
                        BOUND_STEPS: tl.constexpr, TILE: tl.constexpr,
                        NUM_PIVOTS: tl.constexpr, CAP: tl.constexpr, RANK_ROWS: tl.constexpr,
                        RANK_COLS: tl.constexpr, SAMPLE: tl.constexpr):
    """One program per row; the module docstring states the algorithm."""
    row = tl.program_id(0).to(tl.int64)
    row_ptr = logits_ptr + row * row_stride
    scratch_ptr += row * 2 * CAP
    k, p = row_k_p(k_ptr, p_ptr, row, V, HAS_K, HAS_P)
    # The call's value checks, made by every program over all B rows, so a bad value anywhere
    # makes every row write nothing.
    clear = may_write(k_ptr, p_ptr, B, guard_ptr, check, guarded, HAS_K, HAS_P)
    if ((k < V) | (p < 1.0)) & clear:
        cut, listed = row_cut(row_ptr, V, k, p, scratch_ptr, HAS_K, HAS_P, BLOCK, NUM_STAGES, LANES, BOUND_STEPS,
                              TILE, NUM_PIVOTS, CAP, RANK_ROWS, RANK_COLS, SAMPLE, True)
        write_cut(row_ptr, V, cut, scratch_ptr, listed, CAP, BLOCK, NUM_STAGES)


def apply_top_k_top_p(logits: torch.Tensor, k: torch.Tensor | None = None,
                      p: torch.Tensor | None = None) -> torch.Tensor:
    """Mask `logits` in place (see the module docstring) and return it."""
    guard = check_top_k_top_p(logits, k, p)
    launched = logits.numel() > 0 and (k is not None or p is not None)
    flag = guard.settle(in_kernel=launched)  # else the checks are launched on their own
    return launch_top_k_top_p(logits, k, p, flag, guard.on_device)


def launch_top_k_top_p(logits: torch.Tensor, k: torch.Tensor | None, p: torch.Tensor | None,
                       flag: torch.Tensor | None, check: bool) -> torch.Tensor:
    """`apply_top_k_top_p`'s launches, for arguments that passed `check_top_k_top_p`: under the
    guard flag `flag` (None: unguarded); `check`: the kernels make the call's value checks."""
    batch, vocab = logits.shape
    if logits.numel() == 0 or (k is None and p is None):
        return logits
    check_launchable(_top_k_top_p_kernel, logits)
    device = device_kind(logits)
    plan = split_plan(batch, vocab, device, k is not None, p is not None)
    if plan is not None:
        launch_split(logits, p, plan, device, flag, check)
        return logits
    config = LAUNCH_CONFIG[device]
    chunks = chunks_plan(batch, vocab, device, k is not None, p is not None)
    if chunks is not None:
        launch_chunks(logits, k, p, chunks, device, config, flag, check)
        return logits
    k_splits = k_split_plan(batch, vocab, device, k is not None, p is not None)
    if k_splits is not None:
        launch_k_split(logits, k, k_splits, device, flag, check)
        return logits
    wide = WIDE_TOP_P[device]
    if k is None and wide is not None and batch <= wide["rows"]:
        config = {**config, "TILE": wide["TILE"], "num_warps": wide["num_warps"]}
    scratch = torch.empty((batch, 2 * config["CAP"]), dtype=torch.float32, device=logits.device)
    _top_k_top_p_kernel[(batch,)](
        logits, logits.stride(0), k, p, scratch, batch, vocab, guard_pointer(flag, scratch), check, flag is not None,
        HAS_K=k is not None, HAS_P=p is not None, **config,
    )
    return logits


def scratch_bytes(batch: int, vocab: int, device: str, has_k: bool, has_p: bool) -> int:
    """Bytes a call allocates beyond the logits: the one-program path's [B, 2 * CAP] fp32
    scratch, or the one buffer of the path the call takes."""
    plan = split_plan(batch, vocab, device, has_k, has_p)
    if plan is not None:
        return split_buffer_bytes(batch, plan, device)
    chunks = chunks_plan(batch, vocab, device, has_k, has_p)
    if chunks is not None:
        return chunks_buffer_bytes(batch, chunks, device, LAUNCH_CONFIG[device]["CAP"])
    k_splits = k_split_plan(batch, vocab, device, has_k, has_p)
    if k_splits is not None:
        return k_split_buffer_bytes(batch, k_splits, device)
    return batch * 2 * LAUNCH_CONFIG[device]["CAP"] * 4
