#!/usr/bin/env bash
# compute-sanitizer over one call of each kernel and of the pipeline (bench/sanitize_calls.py:
# ${DTYPE:-bf16} logits, ${BATCH:-4} x ${VOCAB:-32000}, contiguous and row-strided), on a CUDA GPU.
# VOCAB=65536 also takes top-p alone's split path (from 65536 columns on CUDA).
#   bash scripts/sanitize.sh                      # tools: memcheck racecheck initcheck
#   TOOLS="memcheck racecheck" bash scripts/sanitize.sh
# Each tool runs the driver once over every call. Prints one line per (tool, call) with its
# error count: when the tool's ERROR SUMMARY is 0, every call is clean; otherwise each call is
# re-run alone under that tool, so every count is that call's own. Exit 0 only when every tool
# reports 0 errors and the driver completed every call. Logs: ${OUT:-sanitize-out}/.
# The sanitizer: $COMPUTE_SANITIZER, else compute-sanitizer on PATH, else /usr/local/cuda*/bin.
# PyTorch's caching allocator is off (PYTORCH_NO_CUDA_MEMORY_CACHING=1), so an access past a
# tensor's end reaches memory the sanitizer knows is unallocated instead of a cached block.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-sanitize-out}; mkdir -p "$OUT"
PYTHON=${PYTHON:-python}
SANITIZER=$("$PYTHON" -c 'from samplecheck.harness.memcheck import find_sanitizer; print(find_sanitizer() or "")')
if [ ! -x "$SANITIZER" ]; then
  # pip's nvidia-cuda-sanitizer-api wheels ship the sanitizer's libraries, not this program:
  # it comes with a CUDA toolkit.
  echo "compute-sanitizer not found (set COMPUTE_SANITIZER, put it on PATH, or install a CUDA toolkit)" >&2
  exit 2
fi
export PYTORCH_NO_CUDA_MEMORY_CACHING=1
driver=("$PYTHON" -m bench.sanitize_calls --device cuda --batch "${BATCH:-4}" --vocab "${VOCAB:-32000}"
        --dtype "${DTYPE:-bf16}")
# The names do not depend on the device or size: list them cheaply, outside the sanitizer.
mapfile -t calls < <("$PYTHON" -m bench.sanitize_calls --device cpu --batch 1 --vocab 16 --list) || exit 1
[ "${#calls[@]}" -gt 0 ] || { echo "the driver listed no calls" >&2; exit 1; }

# run TOOL LOG [DRIVER ARGS...]: the driver under the tool; prints "ERRORS DONE" (the tool's
# ERROR SUMMARY count, or "?" when it printed none; the number of calls the driver completed).
run() {
  local tool=$1 log=$2; shift 2
  "$SANITIZER" --tool "$tool" --error-exitcode 1 "${driver[@]}" "$@" > "$log" 2>&1
  local errors done
  # memcheck/initcheck print "ERROR SUMMARY: N errors"; racecheck "RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)".
  errors=$(sed -n -e 's/.*ERROR SUMMARY: \([0-9][0-9]*\) error.*/\1/p' \
    -e 's/.*RACECHECK SUMMARY: .*(\([0-9][0-9]*\) error.*/\1/p' "$log" | tail -1)
  done=$(grep -c '^sanitize-done: ' "$log")
  echo "${errors:-?} $done"
}

status=0
for tool in ${TOOLS:-memcheck racecheck initcheck}; do
  read -r errors done < <(run "$tool" "$OUT/$tool.log")
  if [ "$errors" = 0 ] && [ "$done" = "${#calls[@]}" ]; then
    for call in "${calls[@]}"; do printf '%-10s %-32s 0 errors\n' "$tool" "$call"; done
    continue
  fi
  status=1
  echo "$tool: ERROR SUMMARY ${errors}, ${done}/${#calls[@]} calls completed ($OUT/$tool.log); each call alone:"
  for call in "${calls[@]}"; do
    read -r errors done < <(run "$tool" "$OUT/$tool-${call//\//-}.log" --calls "$call")
    note=""; [ "$done" = 1 ] || note=" (the call did not complete: see $OUT/$tool-${call//\//-}.log)"
    printf '%-10s %-32s %s errors%s\n' "$tool" "$call" "$errors" "$note"
  done
done
[ $status = 0 ] && echo "sanitize: every tool clean on every call" || echo "sanitize: errors (logs in $OUT/)"
exit $status
