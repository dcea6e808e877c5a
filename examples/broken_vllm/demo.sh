#!/usr/bin/env bash
# Declared semantics do not blind the suite: three copies of vLLM's vendored kernels, each
# with one realistic bug of our own (made here with sed, outside the project), run through
# the vLLM pack with its declarations. Done when the pristine copy shows no failure outside
# the pinned findings and every broken copy shows at least one.
#   usage: SAMPLECHECK_VLLM_KERNELS=/path/to/vllm_kernels examples/broken_vllm/demo.sh [--device=cpu|cuda]
# (on CPU, TRITON_INTERPRET=1 is set by the plugin for --device=cpu).
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
  SAMPLECHECK_VLLM_KERNELS=$1 python -m pytest tests/cover --ignore=tests/cover/test_plugins.py --backend-only \
    -k "$2" "$DEVICE" --hypothesis-profile=gate -n "${WORKERS:-8}" -p no:cacheprovider -q -rf > "$3" 2>&1
}
status=0
for bug in "${BUGS[@]}"; do
  IFS='|' read -r name file backend expr <<< "$bug"
  copy="$WORK/$name/vllm_kernels"; mkdir -p "$copy"; cp -r "$PRISTINE"/. "$copy"
  sed -i "$expr" "$copy/$file"
  if cmp -s "$PRISTINE/$file" "$copy/$file"; then echo "$name: the edit did not apply"; status=1; continue; fi
  run "$PRISTINE" "$backend" "$WORK/$name-pristine.log"
  run "$copy" "$backend" "$WORK/$name-broken.log"
  pristine=$(grep -c '^FAILED' "$WORK/$name-pristine.log"); broken=$(grep -c '^FAILED' "$WORK/$name-broken.log")
  echo "$name ($backend, $file: $(diff "$PRISTINE/$file" "$copy/$file" | grep '^>' | sed 's/^> *//')):"
  echo "  pristine: $(tail -1 "$WORK/$name-pristine.log")"
  echo "  broken:   $(tail -1 "$WORK/$name-broken.log")"
  grep '^FAILED' "$WORK/$name-broken.log" | cut -c1-160 | head -5 | sed 's/^/    /'
  if [ "$pristine" -ne 0 ] || [ "$broken" -eq 0 ]; then status=1; echo "  NOT caught (or the pristine copy fails)"; fi
done
echo "logs: $WORK"
exit $status
