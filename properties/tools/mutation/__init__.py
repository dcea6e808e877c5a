"""Mutation analysis of samplecheck's kernels: operators, generation, report (`samplecheck mutate`)."""
