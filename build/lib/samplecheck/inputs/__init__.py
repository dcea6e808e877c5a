"""What the properties feed a kernel: logits recipes, Hypothesis strategies, row layouts with
poisoned gaps, and drawing or replaying a case inside a test."""
