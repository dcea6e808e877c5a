"""Top-k masking (top-p off) with each row split over chunk programs, in one launch: the path
that `samplecheck.kernels.top_k_top_p.apply_top_k_top_p` takes for a small batch with `k` and no
`p` (`chunks_plan`), where one program per row would leave most of the GPU idle.

Contract, semantics and cut: those of `samplecheck.kernels.top_k_top_p` (its module docstring).
The cut of a row with 0 < k < V is the k-th largest key counted with multiplicity (NaN read
as -inf), the smallest key c with #(key > c) < k, which the one-program search finds too; so
both paths mask every row identically.

One launch over a [B, S] grid (S chunks of 2**COL_BITS columns a row); rows with top-k off
do nothing:
- where k <= K_MAX, each program keeps its chunk's k largest chunk codes
  (`samplecheck.kernels.chunk_codes`: value key, then column; distinct) in the row's lists;
- each program then counts itself in at the row's counter (an atomic add, acquire-release,
  after a barrier: the program's stores are visible to whoever counts in after it); the
  program that counts in last finishes the row alone: where k <= K_MAX the k-th largest of
  the row's S * k codes (the row's k largest entries are among them) gives the cut
  (`code_cut`); else it searches the whole row as the one-program kernel does
  (`samplecheck.kernels.cut_search.top_k_cut`, with the scratch). It writes -inf below the cut
  and at NaN, and nothing else.
Value checks (deferred or captured): every program checks all B values of k itself and
program (0, 0) records a failure in the guard flag; a set flag makes every program write
nothing.

Buffer per call: one int64 allocation, zeroed (the counters must start at 0), [B, WORDS]
with WORDS = S * K_MAX (the lists) + CAP / 2 (the fp32 scratch of CAP entries) + 2 (the
counter and a pad word, so every row starts 16-byte aligned); `chunks_buffer_bytes`. No host
synchronisation: the call captures in a CUDA graph.
"""

import torch
import triton.language as tl

from samplecheck.kernels.chunk_codes import chunk_codes, code_cut, kth_largest, row_codes, store_largest
from samplecheck.kernels.cut_search import may_write, row_extremes, row_k_p, top_k_cut, write_below_cut
from samplecheck.kernels.launching import jit
from samplecheck.kernels.runtime import cdiv

# By device: MAX_ROWS, the largest batch that takes this path, and MIN_VOCAB, the smallest
# vocab; COL_BITS: 2**COL_BITS columns a chunk (COL_BITS <= 12, `chunk_codes`); K_MAX: the
# largest k kept in chunk lists (larger k search the row in its last program); MAX_MERGE: the
# most codes a row's lists may hold (S * K_MAX), the last program's tile whatever the vocab (a
# power of two; one compiled variant for every vocab, the lanes past S * k unread); num_warps: 8, as
# the one-program kernel's search tiles need (compiled for sm_90: 80 registers a thread with
# bf16 logits, 169 with fp32, no spills; at 4 warps, spills). Not measured on a GPU yet: the
# one-program kernel took 100 us at one row of 151936 (k = 50) on the H200, most of the GPU
# idle. On the CPU, every vocab and small chunks and K_MAX, so that most of the suite's top-k
# calls on at most MAX_ROWS rows take this path, over one or several chunks, with k <= K_MAX
# and with the row search.
CHUNKS_CONFIG = {
    "cuda": dict(MAX_ROWS=64, MIN_VOCAB=8192, COL_BITS=12, K_MAX=64, MAX_MERGE=4096, num_warps=8),
    "cpu": dict(MAX_ROWS=4, MIN_VOCAB=1, COL_BITS=8, K_MAX=32, MAX_MERGE=2048, num_warps=4),
}


@jit(do_not_specialize=["k_ptr", "B", "S", "guard_ptr"])
def _top_k_chunks_kernel(logits_ptr, row_stride, k_ptr, buffer_ptr, B, V, S, guard_ptr, check, GUARDED: tl.constexpr,
                         COL_BITS: tl.constexpr, K_MAX: tl.constexpr, MERGE: tl.constexpr, BLOCK: tl.constexpr,
                         NUM_STAGES: tl.constexpr, LANES: tl.constexpr, BOUND_STEPS: tl.constexpr,
                         TILE: tl.constexpr, NUM_PIVOTS: tl.constexpr, CAP: tl.constexpr, RANK_ROWS: tl.constexpr,
                         RANK_COLS: tl.constexpr):
    """Program (row, chunk); the module docstring states the algorithm."""
    row = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1)
    row_ptr = logits_ptr + row * row_stride
    lists_ptr = buffer_ptr + row * (S * K_MAX + CAP // 2 + 2)
    count_ptr = lists_ptr + S * K_MAX + CAP // 2
    k, _p = row_k_p(k_ptr, k_ptr, row, V, True, False)
    if (k < V) & may_write(k_ptr, k_ptr, B, guard_ptr, check, GUARDED, True, False):
        if k <= K_MAX:
            first = split << COL_BITS
            local = tl.arange(0, 1 << COL_BITS)
            live = first + local < V
            codes = chunk_codes(tl.load(row_ptr + first + local, mask=live), local, live, COL_BITS, False)
            store_largest(codes, lists_ptr + split * K_MAX, k, False)
        tl.debug_barrier()
        if tl.atomic_add(count_ptr, 1) == S - 1:
            if k <= K_MAX:
                kth = kth_largest(row_codes(lists_ptr, S, k, K_MAX, COL_BITS, MERGE), k)
                cut = code_cut(kth, logits_ptr.dtype.element_ty)
            else:
                scratch_ptr = (lists_ptr + S * K_MAX).to(tl.pointer_type(tl.float32), bitcast=True)
                lane_max, row_max, key_lo, key_hi = row_extremes(row_ptr, V, BLOCK, NUM_STAGES)
                cut, _n, _covered = top_k_cut(row_ptr, V, k, scratch_ptr, lane_max, row_max, key_lo, key_hi, BLOCK,
                                              NUM_STAGES, LANES, BOUND_STEPS, TILE, NUM_PIVOTS, CAP, RANK_ROWS,
                                              RANK_COLS)
            write_below_cut(row_ptr, 0, V, cut, BLOCK, NUM_STAGES)


def chunks_plan(batch: int, vocab: int, device: str, has_k: bool, has_p: bool) -> int | None:
    """S, the chunks a row splits into, when the call takes this path (k without p, at most
    MAX_ROWS rows, at least MIN_VOCAB columns, S * K_MAX codes within MAX_MERGE); else None."""
    c = CHUNKS_CONFIG[device]
    splits = cdiv(vocab, 1 << c["COL_BITS"])
    if not has_k or has_p or batch > c["MAX_ROWS"] or vocab < c["MIN_VOCAB"] or splits * c["K_MAX"] > c["MAX_MERGE"]:
        return None
    return splits


def _row_words(splits: int, device: str, cap: int) -> int:
    """The int64 words of a row's part of the buffer (module docstring)."""
    return splits * CHUNKS_CONFIG[device]["K_MAX"] + cap // 2 + 2


def chunks_buffer_bytes(batch: int, splits: int, device: str, cap: int) -> int:
    """Bytes the path allocates for a call: its one buffer (module docstring)."""
    return 8 * batch * _row_words(splits, device, cap)


def launch_chunks(logits: torch.Tensor, k: torch.Tensor, splits: int, device: str, search: dict,
                  flag: torch.Tensor | None, check: bool) -> None:
    """Mask `logits` (module docstring); `search`: the one-program kernel's launch config
    (`samplecheck.kernels.top_k_top_p.LAUNCH_CONFIG[device]`), for the rows searched whole."""
    c = CHUNKS_CONFIG[device]
    batch, vocab = logits.shape
    buffer = logits.new_zeros((batch, _row_words(splits, device, search["CAP"])), dtype=torch.int64)
    _top_k_chunks_kernel[(batch, splits)](
        logits, logits.stride(0), k, buffer, batch, vocab, splits, flag, check, GUARDED=flag is not None,
        COL_BITS=c["COL_BITS"], K_MAX=c["K_MAX"], MERGE=c["MAX_MERGE"], BLOCK=search["BLOCK"],
        NUM_STAGES=search["NUM_STAGES"], LANES=search["LANES"], BOUND_STEPS=search["BOUND_STEPS"],
        TILE=search["TILE"], NUM_PIVOTS=search["NUM_PIVOTS"], CAP=search["CAP"], RANK_ROWS=search["RANK_ROWS"],
        RANK_COLS=search["RANK_COLS"], num_warps=c["num_warps"])
