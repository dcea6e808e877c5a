#!/usr/bin/env bash
# Declared semantics do not blind the suite: three copies of vLLM's vendored kernels, each
# with one realistic bug of our own (made here with sed, outside the project), run through
# the vLLM pack with its declarations. Done when the pristine copy shows no failure outside
# the pinned findings (strict xfails) and every broken copy shows at least one failure.
#   usage: SAMPLECHECK_VLLM_KERNELS=/path/to/vllm_kernels examples/broken_vllm/demo.sh [--sc-device=cpu|cuda]
# (PRISTINE_LOG=<log of the pack's gate run with -rf> reuses that run for the pristine copy;
# ONLY=<bug name> runs that broken copy alone.)
# On CPU (the plugin sets TRITON_INTERPRET=1 for --sc-device=cpu) use the CPU profile and leave
# the sampling tests out: PROFILE=ci EXTRA=--ignore=tests/cover/test_distribution.py ... --sc-device=cpu
set -u
cd "$(dirname "$0")/../.."
PRISTINE=${SAMPLECHECK_VLLM_KERNELS:?point SAMPLECHECK_VLLM_KERNELS at the vendored vllm_kernels folder}
DEVICE=${1:---device=cuda}
WORK=$(mktemp -d)
# name | file | backend | sed expression (one line changed)
BUGS=(
  "gumbel_exponential_noise|mrv2_gumbel.py|vllm_mrv2_gumbel|s/gumbel_noise = -tl.log(-tl.log(u))/gumbel_noise = -tl.log(u)/"
  "presence_counts_repeats|mrv2_penalties.py|vllm_mrv2_penalties|s/logits -= pres_penalty \* output_bin_mask/logits -= pres_penalty * output_bin_counts/"
  "bad_word_whole_history_skipped|v1_bad_words.py|vllm_v1_bad_words|s/if len(bad_word_ids) > len(past_tokens_ids) + 1:/if len(bad_word_ids) >= len(past_tokens_ids) + 1:/"
)
run() {  # $1: the kernels folder, $2: -k expression, $3: log
  SAMPLECHECK_VLLM_KERNELS=$1 python -m pytest tests/cover --ignore=tests/cover/test_plugins.py --sc-backend-only \
    -k "$2" "$DEVICE" --sc-profile="${PROFILE:-gate}" -n "${WORKERS:-8}" -p no:cacheprovider -q -rf \
    ${EXTRA:-} > "$3" 2>&1
}
status=0
backends=$(printf '%s\n' "${BUGS[@]}" | cut -d'|' -f3 | paste -sd' ' | sed 's/ / or /g')
if [ -n "${PRISTINE_LOG:-}" ]; then  # a log of the whole pack on the pristine copy, same profile
  grep -E "^FAILED .*($(echo "$backends" | sed 's/ or /|/g'))" "$PRISTINE_LOG" > "$WORK/pristine.log"
  echo "pristine copy ($backends): from $PRISTINE_LOG, $(wc -l < "$WORK/pristine.log") failures of these backends"
else
  run "$PRISTINE" "$backends" "$WORK/pristine.log"
  echo "pristine copy ($backends): $(tail -1 "$WORK/pristine.log")"
fi
if grep -q '^FAILED' "$WORK/pristine.log"; then status=1; echo "  the pristine copy fails:"; grep '^FAILED' "$WORK/pristine.log" | cut -c1-160; fi
for bug in "${BUGS[@]}"; do
  IFS='|' read -r name file backend expr <<< "$bug"
  [ -n "${ONLY:-}" ] && [ "$name" != "$ONLY" ] && continue
  copy="$WORK/$name/vllm_kernels"; mkdir -p "$copy"; cp -r "$PRISTINE"/. "$copy"
  sed -i "$expr" "$copy/$file"
  if cmp -s "$PRISTINE/$file" "$copy/$file"; then echo "$name: the edit did not apply"; status=1; continue; fi
  run "$copy" "$backend" "$WORK/$name.log"
  echo "$name ($backend, $file: $(diff "$PRISTINE/$file" "$copy/$file" | grep '^>' | sed 's/^> *//')):"
  echo "  broken copy: $(tail -1 "$WORK/$name.log")"
  grep '^FAILED' "$WORK/$name.log" | cut -c1-160 | head -5 | sed 's/^/    /'
  grep -q '^FAILED' "$WORK/$name.log" || { status=1; echo "  NOT caught"; }
done
echo "logs: $WORK"
exit $status
