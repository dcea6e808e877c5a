"""`samplecheck badinputs`: the bad-input table's outcome counts on one device, as markdown.

Runs every entry of the table (samplecheck.families.bad_inputs) on every registered backend
of its record, judged by samplecheck.judging.bad_calls (as tests/cover/test_bad_inputs.py
does), and prints the counts per outcome (clear error / documented result / unclear / input
changed before error), then one line per cell that is neither. Exit 1 when any cell is unclear or changed an input.
"""

from samplecheck.tools import flags


def main(argv: list[str] | None = None) -> int:
    parser = flags.parser("badinputs", __doc__.splitlines()[0])
    flags.add_device(parser)
    args = parser.parse_args(argv)

    from samplecheck.kernels.runtime import use_device

    device = use_device(flags.resolve_device(parser, args.device))
    from samplecheck.families.bad_inputs import TABLE
    from samplecheck.harness.plugins import register_all
    from samplecheck.judging import bad_calls
    from samplecheck.registry.matrix import REGISTRY

    register_all()
    counts, notes = bad_calls.tally(TABLE, device, REGISTRY)
    total = sum(counts.values())
    print(f"Bad-input table on {device}: {total} cells "
          f"({len(TABLE)} entries x the backends of their record)\n")
    print("| outcome | cells |\n|---|---|")
    for kind in bad_calls.OUTCOMES:
        print(f"| {kind} | {counts[kind]} |")
    for note in notes:
        print(f"- {note}")
    return int(counts[bad_calls.UNCLEAR] + counts[bad_calls.CHANGED] > 0)
