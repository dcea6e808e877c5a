"""How the properties judge an output: bitwise and masked-set checks, sampling laws, the
statistical tests with their stated error rates, and GPU memory deltas."""
