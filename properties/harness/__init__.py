"""What runs the properties: the runner that builds a case and calls a backend, the checks of
properties that replay or rewrite a call (call inputs, CUDA-graph replay, off rows, edge rows),
plug-ins and mutants, the Hypothesis profiles, and the pytest plugin."""
