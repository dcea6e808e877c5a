"""`samplecheck badinputs`: the bad-input table's outcome counts on one device, as markdown.

Runs every entry of samplecheck.tests.cover.bad_input_table on every registered backend of
its record (as tests/cover/test_bad_inputs.py does) and prints the counts per outcome
(clear error / documented result / unclear / input changed before error), then one line
per cell that is neither. Exit 1 when any cell is unclear or changed an input.
"""

from samplecheck.tools import flags


def main(argv: list[str] | None = None) -> int:
    parser = flags.parser("badinputs", __doc__.splitlines()[0])
    flags.add_device(parser)
    args = parser.parse_args(argv)

    from samplecheck.kernels.runtime import use_device

    device = use_device(flags.resolve_device(parser, args.device))
    from samplecheck.harness.plugins import register_all
    from samplecheck.registry.matrix import REGISTRY
    from samplecheck.tests.cover import bad_input_outcomes as outcomes

    register_all()
    counts, notes = outcomes.tally(device, REGISTRY)
    total = sum(counts.values())
    print(f"Bad-input table on {device}: {total} cells "
          f"({len(outcomes.TABLE)} entries x the backends of their record)\n")
    print("| outcome | cells |\n|---|---|")
    for kind in outcomes.OUTCOMES:
        print(f"| {kind} | {counts[kind]} |")
    for note in notes:
        print(f"- {note}")
    return int(counts[outcomes.UNCLEAR] + counts[outcomes.CHANGED] > 0)
