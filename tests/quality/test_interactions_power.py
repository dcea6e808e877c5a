"""The sampler's interaction-class power (issue 18): defects that show only when two ops bind
in the same row, the order of ops or which tensor a later op reads, are injected into our
sampler (apply_sampling_params with two of its ops rewired, every op still correct alone) and
hunted by the oracle-equivalence check on EXAMPLES drawn sampler cases under each of SEEDS
(CPU sizes). Each defect must be caught in at least one; `-s` prints the counts per distinct
case, recorded in docs/nightly.md (measured with SAMPLECHECK_POWER_RATES=1: else the hunt stops
at its first catch)."""

from unittest import mock

import pytest
import torch
from hypothesis import HealthCheck, given, seed, settings, strategies as st

from samplecheck.harness.runner import prepare, reference, run
from samplecheck.inputs.drawing import draw_case
from samplecheck.inputs.strategies import BUDGETS
from samplecheck.kernels import sampling_params as sampler
from samplecheck.registry.matrix import RECORDS, Combo
from samplecheck.tests.quality.test_off_encodings_power import Injected, settled

EXAMPLES = 25
SEEDS = range(8)  # EXAMPLES cases under each Hypothesis seed
REAL = {name: getattr(sampler, name) for name in
        ("launch_logit_bias", "launch_penalties", "launch_bad_words", "launch_temperature", "launch_min_p",
         "launch_top_k_top_p")}
# The sampler calls each op's launch function positionally, its guard flag and `check` last.


def temperature_before_penalties(params):
    """The penalties act on l / T (temperature moved before them)."""
    ran = []

    def penalties(logits, *args):
        ran.append(True)
        return REAL["launch_penalties"](REAL["launch_temperature"](logits, params.temperature, *args[-2:]), *args)

    def temperature(logits, t, *guard):
        return logits if ran else REAL["launch_temperature"](logits, t, *guard)
    return {"launch_penalties": penalties, "launch_temperature": temperature}


def min_p_before_temperature(params):
    """min_p's threshold taken on the logits before temperature (a stale tensor)."""
    def min_p(logits, m, *guard):
        return REAL["launch_temperature"](REAL["launch_min_p"](logits, m, *guard), params.temperature, *guard)
    return {"launch_temperature": lambda logits, t, *guard: logits, "launch_min_p": min_p}


def top_p_before_top_k(params):
    """Top-p on the whole row, then top-k (the survivors' renormalisation skipped)."""
    def top_k_top_p(logits, k, p, *guard):
        return REAL["launch_top_k_top_p"](REAL["launch_top_k_top_p"](logits, None, p, *guard), k, None, *guard)
    return {"launch_top_k_top_p": top_k_top_p}


def bias_after_temperature(params):
    """Allowed ids, biases and min_tokens applied after the penalties and temperature."""
    stashed = []

    def temperature(logits, t, *guard):
        REAL["launch_temperature"](logits, t, *guard)
        return REAL["launch_logit_bias"](logits, *stashed)
    return {"launch_logit_bias": lambda logits, *args: stashed.extend(args) or logits,
            "launch_temperature": temperature}


def bad_words_after_top_k(params):
    """Bad words banned after top-k/top-p chose the survivors."""
    stashed = []

    def top_k_top_p(logits, k, p, *guard):
        REAL["launch_top_k_top_p"](logits, k, p, *guard)
        return REAL["launch_bad_words"](logits, *stashed) if stashed else logits
    return {"launch_bad_words": lambda logits, *args: stashed.extend(args) or logits,
            "launch_top_k_top_p": top_k_top_p}


DEFECTS = {f.__name__: f for f in (temperature_before_penalties, min_p_before_temperature, top_p_before_top_k,
                                   bias_after_temperature, bad_words_after_top_k)}


def rewired(defect):
    """Our sampler with the defect's replacements in place for the duration of each call."""
    def call(logits, *, params):
        with mock.patch.multiple(sampler, **defect(params)):
            return sampler.apply_sampling_params(logits, params)
    return call


@pytest.mark.parametrize("name", DEFECTS)
def test_an_interaction_defect_is_caught(name):
    info = RECORDS["sampling_params"]
    combo = Combo(info, Injected(name, "injected:injected", fn=rewired(DEFECTS[name])), torch.float32, "contig")
    caught = {}  # repr of each distinct case -> caught (Hypothesis mutates examples, so some repeat)

    for value in SEEDS:
        if settled(list(caught.values()), 1):
            break

        @seed(value)
        @settings(max_examples=EXAMPLES, database=None, deadline=None, suppress_health_check=list(HealthCheck))
        @given(data=st.data())
        def hunt(data):
            case = draw_case(data, combo, info.cases(BUDGETS["cpu"]))
            if settled(list(caught.values()), 1):  # after the draw: what Hypothesis draws may not depend on state
                return
            placed, args = prepare(combo, case, torch.device("cpu"))
            original = placed.view.clone()
            expected = reference(combo, original, args)
            try:
                info.check(original, run(combo, placed.view, args), expected, combo.id)
            except AssertionError:
                caught[repr(case)] = True
            else:
                caught[repr(case)] = False

        hunt()
    print(f"\n{name}: caught in {sum(caught.values())} of {len(caught)} distinct cases "
          f"({len(SEEDS) * EXAMPLES} examples" + (", stopped at the first catch)" if settled(list(caught.values()), 1)
                                                  else ")"))
    assert any(caught.values()), f"{name} survived {len(caught)} distinct cases"
