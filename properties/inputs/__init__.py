"""What the properties feed a kernel: logits recipes, Hypothesis strategies, and drawing or
replaying a case inside a test."""
