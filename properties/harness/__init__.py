"""What runs the properties: the runner that builds a case and calls a backend, plug-ins and
mutants, the Hypothesis profiles, and the pytest plugin."""
