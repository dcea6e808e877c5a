"""How the properties judge an output: sampling laws, the statistical tests with their stated
error rates, GPU memory deltas, and findings' signatures in failure messages."""
