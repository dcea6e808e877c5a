"""A check of the drawing contract of samplecheck.inputs.drawing: an example draws every
choice before its first device work (a tensor built, a backend called)."""

from typing import Callable


class DrawOrder:
    """A Hypothesis `data` stand-in that logs each draw before passing it on to `data`, and
    wrappers (`device`) that log a step of device work before doing it."""

    def __init__(self, data):
        self.data = data
        self.steps: list[str] = []

    def draw(self, strategy, label=None):
        self.steps.append(f"draw {label}")
        return self.data.draw(strategy, label=label)

    def device(self, work: Callable, name: str) -> Callable:
        """`work`, logged as `name` at each call."""
        def logged(*args, **kwargs):
            self.steps.append(name)
            return work(*args, **kwargs)
        return logged

    def draws_after_device(self) -> list[str]:
        """The steps from the first device step on, where a draw follows one; [] when every
        draw came first."""
        first = next((i for i, step in enumerate(self.steps) if not step.startswith("draw ")), len(self.steps))
        late = self.steps[first:]
        return late if any(step.startswith("draw ") for step in late) else []
