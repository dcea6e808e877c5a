"""samplecheck: correctness verification for LLM sampling kernels.

This folder (properties/ in the repository) is installed as the package `samplecheck`;
kernels/, oracles/ and tests/ are installed as `samplecheck.kernels`, `samplecheck.oracles`
and `samplecheck.tests`. Subpackages by role:

- `samplecheck.inputs`: logits recipes, strategies, layouts, drawing cases;
- `samplecheck.judging`: checks, sampling laws, statistics, memory;
- `samplecheck.harness`: the registry, the runner, plug-ins, profiles, the pytest plugin;
- `samplecheck.infos`: one registry record per kernel;
- `samplecheck.families`: behaviour shared by records of one kind (OpInfo-style subclasses);
- `samplecheck.backends`: adapters for third-party libraries (FlashInfer);
- `samplecheck.probes`: GPU probes of third-party raw APIs;
- `samplecheck.tools`: the `samplecheck` command and what it runs.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("samplecheck")
except PackageNotFoundError:  # imported from a source tree that was not installed
    __version__ = "unknown"
