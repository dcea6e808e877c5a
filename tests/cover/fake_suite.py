"""A stand-in for the suite's pytest run, for tests of the commands that start it."""

import json
from pathlib import Path


def passed(command: list[str]) -> int:
    """A run of `command` that passed one test: its `--sc-results` file written (when asked
    for), exit 0."""
    for option in command:
        if option.startswith("--sc-results="):
            Path(option.split("=", 1)[1]).write_text(json.dumps({"tests": [{"nodeid": "t", "duration": 0.1}]}))
    return 0
