"""Hypothesis strategies, the kernel registry, and the checks the generic tests run."""
