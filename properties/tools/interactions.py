"""`samplecheck interactions`: which pairs of the whole sampler's ops bind together in the
cases its tests draw.

A fault that shows only when two ops are active and binding in the same row (the order of
ops, which tensor a later op reads) is reached only by cases where both change that row.
This draws `--examples` sampler cases as the suite does (fixed by `--seed`; `--device` sizes),
computes per row which ops change it (`Pipeline.binding`: a value op changes a value, min_p
or top-k/top-p masks a finite entry), and prints, for each of the 15 pairs of the six ops,
how many cases had it binding in one row, then the pairs never reached. The suite's
sampler tests report the same pairs as Hypothesis events and steer long (nightly) runs
towards more of them with `target()` (`Pipeline.targets`).

    samplecheck interactions --device cpu --examples 200 [--seed 0]
"""

import sys
from collections import Counter

import torch
import hypothesis
from hypothesis import HealthCheck, given, settings, strategies as st

from samplecheck.families.pipeline import OP_PAIRS, binding_pairs
from samplecheck.harness.plugins import register_all
from samplecheck.harness.runner import prepare
from samplecheck.inputs.strategies import BUDGETS
from samplecheck.registry.matrix import RECORDS, Combo
from samplecheck.tools import flags


def measure(examples: int, device: torch.device, seed: int = 0) -> Counter:
    """For each op pair, the number of drawn sampler cases with the pair binding in one row
    (the draws fixed by `seed`, whatever the code around them)."""
    register_all()
    info = RECORDS["sampling_params"]
    combo = Combo(info, info.backends[0], torch.float32, "contig")
    covered = Counter()

    @hypothesis.seed(seed)
    @settings(max_examples=examples, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def draw(data):
        case = data.draw(info.cases(BUDGETS[device.type]), label="case")
        placed, args = prepare(combo, case, device)
        covered.update(binding_pairs(info.pipeline.binding(info.pipeline.reference(placed.view, **args))))

    draw()
    return covered


def table(covered: Counter, examples: int) -> str:
    lines = [f"Op pairs binding together in one row, {examples} drawn sampler cases:", "",
             "| ops | cases |", "|---|---|"]
    lines += [f"| {a} + {b} | {covered[(a, b)]} |" for a, b in OP_PAIRS]
    missing = [f"{a} + {b}" for a, b in OP_PAIRS if not covered[(a, b)]]
    lines += ["", f"{len(OP_PAIRS) - len(missing)} of {len(OP_PAIRS)} pairs reached"
              + (f"; never: {', '.join(missing)}" if missing else "")]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = flags.parser("interactions", __doc__.splitlines()[0])
    flags.add_device(parser)
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0, help="fixes the drawn cases (default 0)")
    args = parser.parse_args(argv)
    device = torch.device(flags.resolve_device(parser, args.device))
    covered = measure(args.examples, device, args.seed)
    print(table(covered, args.examples))
    return 0


if __name__ == "__main__":
    sys.exit(main())
