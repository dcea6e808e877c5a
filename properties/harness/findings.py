"""Pins with a signature (`samplecheck.registry.records.Mark.witness`): whether a failure of a
test is its pinned finding."""


def signature_pin(item):
    """The test's `finding` marker (a pin with a signature), or None."""
    return item.get_closest_marker("finding")


def is_the_finding(item, text: str) -> bool:
    """Whether a failure, described by `text`, is the expected one: any failure under a pin
    without a signature, one that shows the signature under a pin with one."""
    pin = signature_pin(item)
    return pin is None or bool(pin.kwargs["witness"](text))
