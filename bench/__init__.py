"""Benchmarks of samplecheck's kernels, run from the checkout's root (not installed):

    python -m bench.kernels --out FILE.md --json FILE.json   # the table (docs/benchmarks.md)
    python -m bench.compare BASELINE.json NEW.json           # ops slower than a stored baseline
    python -m bench.sanitize_calls                           # one call of each kernel (scripts/sanitize.sh)

Performance figures come from here only, never from tests.
"""
