"""Where the whole pipeline's GPU time goes: each step of `apply_sampling_params` timed alone on
the logits as the pipeline hands them to it (after the steps before it), against the whole call.

    python -m bench.pipeline_steps --sizes 256x151936,256x32000,64x151936
    python -m bench.pipeline_steps --device cpu --sizes 2x3000          # smoke test (interpreter)

The benchmark's inputs (bench.ops: every parameter but the bad words, 20 raw logprobs). The
steps, in the pipeline's order: the raw clone, logit_bias, penalties, temperature, min_p,
top-k/top-p, the Gumbel sample, logprobs; each launched as the pipeline launches it (its
`launch_*` under the pipeline's guard flag). A step's time is a CUDA graph's replay of "restore
the state before the step, run the step", net of the restore's replay (bench.timing); on the
CPU, wall time under the interpreter (a smoke test, not a measurement). Also printed: the rows'
finite entries before and after top-k/top-p, which set its work.
"""

import argparse

import torch

from bench import timing
from bench.kernels import parse_sizes
from samplecheck.kernels.runtime import use_device


def gpu_us(fn) -> float:
    """GPU time of one call of `fn` (its graph's replay), NaN where it does not capture."""
    _, graph = timing.capture(fn)
    return timing.replay_median_us(graph) if graph is not None else float("nan")


TIMERS = {"cuda": gpu_us, "cpu": timing.wall_median_us}


def pipeline_steps(logits: torch.Tensor, batch) -> list:
    """(name, step) in the pipeline's order, each as `apply_sampling_params` launches it; the
    logprobs step reads the raw clone and the Gumbel step's sample (`sampled` of the dict)."""
    from samplecheck.kernels import sampling_params as sp
    from samplecheck.kernels.gumbel import launch_gumbel
    from samplecheck.kernels.logit_bias import launch_logit_bias
    from samplecheck.kernels.min_p import launch_min_p
    from samplecheck.kernels.penalties import launch_penalties
    from samplecheck.kernels.temperature import launch_temperature
    from samplecheck.kernels.top_k_top_p import launch_top_k_top_p

    p, guard = sp.check_sampling_batch(logits, batch)
    flag = guard.settle()
    raw, state = torch.empty_like(logits), {}

    def gumbel():
        state["sampled"] = launch_gumbel(logits, p.seeds, p.positions, p.temperature, flag, False, divide=False)

    return [
        ("clone (raw logprobs)", lambda: raw.copy_(logits)),
        ("logit_bias", lambda: launch_logit_bias(logits, p.allowed_token_ids, p.logit_bias_ids, p.logit_bias_values,
                                                 p.stop_token_ids, p.min_tokens, p.output_len, flag, False)),
        ("penalties", lambda: launch_penalties(logits, p.prompt_token_ids, p.output_token_ids, p.repetition_penalty,
                                               p.frequency_penalty, p.presence_penalty, flag, False)),
        ("temperature", lambda: launch_temperature(logits, p.temperature, flag, False)),
        ("min_p", lambda: launch_min_p(logits, p.min_p, flag, False)),
        ("top-k/top-p", lambda: launch_top_k_top_p(logits, p.top_k, p.top_p, flag, False)),
        ("Gumbel sample", gumbel),
        ("logprobs (raw)", lambda: sp._logprobs(raw, state["sampled"], p, flag)),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pipeline_steps", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="256x151936,256x32000,64x151936", help="comma-separated BxV")
    parser.add_argument("--device", choices=sorted(TIMERS), default="cuda")
    args = parser.parse_args(argv)
    use_device(args.device)
    timer = TIMERS[args.device]
    from bench.ops import full_batch, make_inputs
    from samplecheck.kernels.sampling_params import apply_sampling_params

    for batch_size, vocab in parse_sizes(args.sizes):
        x = make_inputs(batch_size, vocab, args.device)
        logits, batch = x.work, full_batch(x)
        steps = pipeline_steps(logits, batch)
        logits.copy_(x.pristine)
        before = []
        for _, step in steps:  # the state each step starts from
            before.append(logits.clone())
            step()
        finite = [int((s > float("-inf")).sum(1).float().mean()) for s in (before[5], before[6])]
        restore = timer(lambda: logits.copy_(x.pristine))
        timed = "GPU time alone" if args.device == "cuda" else "interpreter wall time"
        print(f"\n{batch_size} x {vocab} ({timed}, µs, net of a {restore:.1f} µs restore; finite entries a row "
              f"before / after top-k/top-p: {finite[0]} / {finite[1]})\n\n| step | µs |\n|---|---|")
        total = 0.0
        for (name, step), start in zip(steps, before):
            took = timer(lambda: (logits.copy_(start), step())) - restore
            total += took
            print(f"| {name} | {took:.1f} |")
        whole = timer(lambda: (logits.copy_(x.pristine), apply_sampling_params(logits, batch))) - restore
        print(f"| sum of the steps | {total:.1f} |\n| whole pipeline | {whole:.1f} |", flush=True)


if __name__ == "__main__":
    main()
