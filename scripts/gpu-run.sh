#!/usr/bin/env bash
# The H200 session's batch, by STEP (logs land in ${OUT:-out}/; each step starts from an
# empty Triton cache, so its wall time includes every JIT compile, as on a fresh runner):
#   1 (default): the PR gate (scripts/gate.sh: suite + kill table) on GPU 0 alone with
#                ${GATE_WORKERS:-16} xdist workers (one H200 machine's cores), then the
#                FlashInfer top-p probe (finding F6);
#   2: the multi-GPU comparison: the suite (profile ${PROFILE:-gate}) on GPU 0 alone, then on
#      every GPU with pytest -n auto;
#   3: the sweep and the bf16-vs-fp32 behaviour report;
#   4: bad input and isolation: the bad-input table and unchecked-value tests (graph capture
#      included) and their outcome counts, distinct cases per kernel with and without per-combo
#      seeds (gate profile), the faulting plug-in's demonstration;
#   5: the measured flakiness (${RUNS:-30} reruns from seed ${FIRST_SEED:-1} of the statistical
#      and exact-distribution tests of our backends with fresh Hypothesis seeds, ${CONCURRENT:-1}
#      at a time), then a nightly piece and its report;
#   6: the vLLM pack (the README's command; vLLM's kernels from .carry/vllm_kernels, a copy of
#      ../shared/external/vllm_kernels), the V1 Triton top-k/top-p layout probe, the broken-copy
#      demonstration (examples/broken_vllm), then the suite of our own backends (gate profile);
#   7: the benchmark table (python -m bench.kernels: bench.md, bench.json; for each dtype of
#      ${BENCH_DTYPES:-bf16} but bf16, bench-DTYPE.md and .json) and compute-sanitizer over one
#      call of each kernel (scripts/sanitize.sh: sanitize.txt, logs in sanitize-logs.tgz);
#   8: mutation analysis of our kernels (samplecheck mutate, ${MUT_SAMPLE:+--sample $MUT_SAMPLE, }16 at
#      once, within ${MUT_BUDGET:-540} s: mutation.md, mutation.json in mutation.tgz);
#   9: the nightly (samplecheck nightly, the whole suite within ${NIGHTLY_BUDGET:-9m}, 16 workers,
#      ${NIGHTLY_EXAMPLES:-planned} examples per test): its
#      report (report.html, report.json, summary.md) and example database in nightly.tgz;
#  10: the route sweeps of issue 31 (python -m bench.settings_sweep: each setting's values timed,
#      their outputs compared bitwise; docs/benchmarks.md, "Sweeping a launch setting"), one
#      markdown file a setting in sweeps.tgz.
# FlashInfer comes from .carry/ when present (../shared/device/flashinfer-carry.sh).
# The device tool brings back at most 8 files: for several steps in one call, give each its
# own OUT and tar them (run 5 lost the gate's suite log that way). Every pytest runs with -v:
# pytest writes its failure summary at the end, so a run stopped by its time limit lost the
# names of its failures (runs 18 and 20); -v's per-test lines survive the stop.
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
[ -f .carry/flashinfer-env.sh ] && source .carry/flashinfer-env.sh
# The checkout installed as `samplecheck` into the machine's Python (its CUDA torch and triton stay).
python -m pip install -q --no-deps --no-build-isolation -e . || exit 1
# pytest-reportlog, when its wheel is carried (.carry/pytest_reportlog-*.whl: `pip download
# pytest-reportlog --no-deps -d .carry`): `$(report_log F)` makes a pytest run append one JSON
# line per finished test to F, so durations survive a time-limit stop (python scripts/slowest.py F).
REPORT_LOG=; ls .carry/pytest_reportlog-*.whl > /dev/null 2>&1 \
  && python -m pip install -q --no-deps .carry/pytest_reportlog-*.whl && REPORT_LOG=1
report_log() { [ -n "$REPORT_LOG" ] && echo "--report-log=$1"; }
export TRITON_CACHE_DIR; TRITON_CACHE_DIR=$(mktemp -d)
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python -c 'import torch, triton, hypothesis, scipy; print("torch", torch.__version__, "triton", triton.__version__, "hypothesis", hypothesis.__version__, "scipy", scipy.__version__, "GPUs", torch.cuda.device_count())'
  python -c 'import flashinfer; print("flashinfer", flashinfer.__version__)' 2>&1 | tail -1
  echo "CPU cores $(nproc)"; } > "$OUT/gpu.txt"
start=$(date +%s)
case "${STEP:-1}" in
1)
  CUDA_VISIBLE_DEVICES=0 OUT="$OUT" timeout -s INT -k 20 "${GATE_LIMIT:-420}" bash scripts/gate.sh \
    -n "${GATE_WORKERS:-16}" -v --durations=30 -rfE --tb=short $(report_log "$OUT/gate-report.jsonl") > "$OUT/gate.log" 2>&1
  echo "gate (1 GPU, ${GATE_WORKERS:-16} workers) exit $? wall $(( $(date +%s) - start )) s" >> "$OUT/gpu.txt"
  timeout 60 python -m samplecheck.probes.flashinfer_top_p > "$OUT/top-p-probe.md" 2>&1
  echo "top-p probe exit $?" >> "$OUT/gpu.txt" ;;
2)
  # Same suite and profile on GPU 0 alone (-n ${GATE_WORKERS:-16}) and on every GPU (-n auto),
  # each with per-test durations (JUnit XML) and GPU utilisation / load samples.
  for gpus in one all; do
    nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader,nounits -l 1 > "$OUT/util-$gpus.csv" &
    sampler=$!; t0=$(date +%s); TRITON_CACHE_DIR=$(mktemp -d)  # both runs compile from scratch
    if [ $gpus = one ]; then visible=0 workers=${GATE_WORKERS:-16}; else visible=$(seq -s, 0 $(( $(nvidia-smi -L | wc -l) - 1 ))) workers=auto; fi
    CUDA_VISIBLE_DEVICES=$visible timeout -s INT -k 20 "${SUITE_LIMIT:-300}" python -m pytest -n $workers -p no:cacheprovider \
      --sc-device=cuda --sc-profile="${PROFILE:-gate}" tests/cover -v -rfE --tb=short --junitxml="$OUT/suite-$gpus.xml" \
      > "$OUT/suite-$gpus.log" 2>&1
    rc=$?; kill $sampler
    echo "suite ${PROFILE:-gate} on GPUs $visible (-n $workers) exit $rc wall $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/suite-$gpus.log")" >> "$OUT/gpu.txt"
    awk -F', ' '{n[$1]++; u[$1]+=$2} END {for (g in n) printf "  GPU %s mean utilisation %.0f%% over %d s\n", g, u[g]/n[g], n[g]}' "$OUT/util-$gpus.csv" >> "$OUT/gpu.txt"
  done ;;
3)
  timeout 300 python -m samplecheck.tools.sweep --device cuda --profile gate --report "$OUT/sweep.md" > "$OUT/sweep.log" 2>&1
  echo "sweep exit $? wall $(( $(date +%s) - start )) s" >> "$OUT/gpu.txt"
  timeout 150 python -m samplecheck.tools.behaviour --device cuda --report "$OUT/behaviour.md" > "$OUT/behaviour.log" 2>&1
  echo "behaviour exit $?" >> "$OUT/gpu.txt" ;;
4)
  timeout 240 python -m pytest tests/cover/test_bad_inputs.py tests/cover/test_unchecked_values.py \
    tests/cover/test_error_inputs.py -n 16 -p no:cacheprovider --sc-device=cuda -v -rfE > "$OUT/bad-inputs.log" 2>&1
  echo "bad-input tests exit $? ($(tail -1 "$OUT/bad-inputs.log"))" >> "$OUT/gpu.txt"
  timeout 120 samplecheck badinputs --device cuda > "$OUT/badinputs.md" 2>&1
  echo "badinputs exit $?" >> "$OUT/gpu.txt"
  for seeds in own shared; do
    off=(); [ $seeds = shared ] && off=(-p no:samplecheck-seeds)
    timeout 150 python -m samplecheck.tools.cases tests/cover/test_row_isolation.py tests/cover/test_oracle_equivalence.py \
      --sc-device=cuda --sc-profile=gate -n 16 "${off[@]}" > "$OUT/cases-$seeds.txt" 2>&1
    echo "distinct cases ($seeds seeds) exit $?" >> "$OUT/gpu.txt"
  done
  WORKERS=8 timeout 200 bash examples/faulting_backend/demo.sh > "$OUT/fault-demo.txt" 2>&1
  cp /tmp/faulting-demo.log "$OUT/fault-demo.log" 2>/dev/null
  echo "fault demo exit $?" >> "$OUT/gpu.txt" ;;
5)
  timeout "${FLAKY_LIMIT:-420}" samplecheck flakiness --device cuda --runs "${RUNS:-30}" --first-seed "${FIRST_SEED:-1}" \
    --concurrent "${CONCURRENT:-1}" --workers "${FLAKY_WORKERS:-16}" --out "$OUT/flakiness.md" -k "not flashinfer" \
    > "$OUT/flakiness.log" 2>&1
  echo "flakiness exit $? wall $(( $(date +%s) - start )) s" >> "$OUT/gpu.txt"
  timeout 150 samplecheck nightly --sc-device=cuda --budget 2m --examples 30 --database "$OUT/db" \
    --out "$OUT/nightly" -k "gumbel or min_p" > "$OUT/nightly.log" 2>&1
  echo "nightly piece exit $?" >> "$OUT/gpu.txt" ;;
6)
  export SAMPLECHECK_VLLM_KERNELS=$PWD/.carry/vllm_kernels
  timeout -s INT -k 20 "${PACK_LIMIT:-330}" samplecheck test --sc-backend-only --sc-device=cuda -v -rfEx --tb=short \
    --durations=20 --junitxml="$OUT/vllm-pack.xml" $(report_log "$OUT/vllm-pack-report.jsonl") > "$OUT/vllm-pack.log" 2>&1
  echo "vLLM pack exit $? wall $(( $(date +%s) - start )) s; $(tail -1 "$OUT/vllm-pack.log")" >> "$OUT/gpu.txt"
  [ -f "$OUT/vllm-pack-report.jsonl" ] && python scripts/slowest.py "$OUT/vllm-pack-report.jsonl" > "$OUT/vllm-pack-slowest.md"
  timeout 90 python -m samplecheck.probes.vllm_triton_layouts > "$OUT/vllm-layouts-probe.md" 2>&1
  echo "layout probe exit $?" >> "$OUT/gpu.txt"
  PRISTINE_LOG=$OUT/vllm-pack.log WORKERS=16 timeout "${DEMO_LIMIT:-200}" bash examples/broken_vllm/demo.sh --sc-device=cuda \
    > "$OUT/broken-vllm.txt" 2>&1
  echo "broken-copy demo exit $?" >> "$OUT/gpu.txt"
  # our own backends under the gate profile, for the record beside the pack
  t0=$(date +%s); unset SAMPLECHECK_VLLM_KERNELS
  timeout -s INT -k 20 "${SUITE_LIMIT:-200}" python -m pytest tests/cover -n 16 -p no:cacheprovider --sc-device=cuda \
    --sc-profile=gate -v -rfE --tb=short > "$OUT/suite.log" 2>&1
  echo "suite (our backends, gate) exit $? wall $(( $(date +%s) - t0 )) s; $(tail -1 "$OUT/suite.log")" >> "$OUT/gpu.txt" ;;
7)
  for dtype in ${BENCH_DTYPES:-bf16}; do
    name=bench; [ "$dtype" = bf16 ] || name=bench-$dtype
    timeout 300 python -m bench.kernels --dtype "$dtype" --out "$OUT/$name.md" --json "$OUT/$name.json" \
      > "$OUT/$name.log" 2>&1
    echo "bench ($dtype logits) exit $? wall $(( $(date +%s) - start )) s" >> "$OUT/gpu.txt"
  done
  t0=$(date +%s)
  OUT="$OUT/sanitize" timeout "${SANITIZE_LIMIT:-280}" bash scripts/sanitize.sh > "$OUT/sanitize.txt" 2>&1
  echo "sanitize exit $? wall $(( $(date +%s) - t0 )) s: $(tail -1 "$OUT/sanitize.txt")" >> "$OUT/gpu.txt"
  tar czf "$OUT/sanitize-logs.tgz" -C "$OUT" sanitize && rm -rf "$OUT/sanitize" ;;
8)
  timeout $(( ${MUT_BUDGET:-540} + 30 )) samplecheck mutate --device cuda --workers 16 --budget "${MUT_BUDGET:-540}" \
    ${MUT_SAMPLE:+--sample "$MUT_SAMPLE"} --out "$OUT/mutation" > "$OUT/mutation.log" 2>&1
  echo "mutation exit $? wall $(( $(date +%s) - start )) s; $(sed -n 3p "$OUT/mutation/mutation.md")" >> "$OUT/gpu.txt"
  tar czf "$OUT/mutation.tgz" -C "$OUT" mutation && rm -rf "$OUT/mutation" ;;
9)
  samplecheck nightly --sc-device=cuda --workers 16 --budget "${NIGHTLY_BUDGET:-9m}" --database "$OUT/nightly/db" \
    ${NIGHTLY_EXAMPLES:+--examples "$NIGHTLY_EXAMPLES"} --out "$OUT/nightly" --history "$OUT/nightly/history" > "$OUT/nightly.log" 2>&1
  echo "nightly exit $? wall $(( $(date +%s) - start )) s; $(tail -1 "$OUT/nightly.log")" >> "$OUT/gpu.txt"
  tar czf "$OUT/nightly.tgz" -C "$OUT" nightly nightly.log && rm -rf "$OUT/nightly" "$OUT/nightly.log" ;;
10)
  mkdir -p "$OUT/sweeps"
  sweep() {  # NAME SETTING VALUES OPS: one sweep, its markdown in sweeps/NAME.md
    timeout "${SWEEP_LIMIT:-150}" python -m bench.settings_sweep "$2" "$3" --ops "$4" --out "$OUT/sweeps/$1.md" \
      > "$OUT/sweeps/$1.log" 2>&1
    echo "sweep $1 ($2 = $3) exit $?" >> "$OUT/gpu.txt"
  }
  chunks=samplecheck.kernels.top_k_chunks:CHUNKS_CONFIG.cuda
  sweep chunk-rows $chunks.MAX_ROWS 0,16,64,256 top_k,top_k_top_p,top_k_top_p_sample,pipeline
  sweep chunk-with-p $chunks.WITH_P False,True top_k_top_p,top_k_top_p_sample,pipeline
  sweep chunk-warps $chunks.num_warps 8,4,16 top_k,top_k_top_p
  sweep chunk-k-max $chunks.K_MAX 64,32 top_k,top_k_top_p
  sweep logprobs-ids samplecheck.kernels.logprobs:TOP_IDS_MAX 0,64 logprobs,pipeline
  sweep split-rows samplecheck.kernels.top_k_top_p_split:SPLIT_CONFIG.cuda.MAX_ROWS 0,32 top_p,top_p_sample
  # the one-program search: fewer pivots make a tally pass cheaper (compares and int64 sums per
  # entry) but narrow less; a larger CAP collects wider brackets (fewer passes, more ranking)
  one=samplecheck.kernels.top_k_top_p:LAUNCH_CONFIG.cuda
  sweep one-pivots $one.NUM_PIVOTS 16,8,4 top_p,top_k_top_p,top_k
  sweep one-cap $one.CAP 1024,2048,4096 top_p,top_k_top_p,top_k
  tar czf "$OUT/sweeps.tgz" -C "$OUT" sweeps && rm -rf "$OUT/sweeps" ;;
esac
cat "$OUT/gpu.txt"
