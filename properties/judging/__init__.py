"""How the properties judge an output: sampling laws, the statistical tests with their stated
error rates, and GPU memory deltas."""
