"""The sampler's op-interaction coverage (samplecheck.tools.interactions): which ops bind in
which rows, and the measurement over drawn cases."""

import torch

from samplecheck.families.pipeline import OP_PAIRS, binding_pairs
from samplecheck.harness.runner import prepare
from samplecheck.infos.sampling_params import EVERYTHING_ON
from samplecheck.registry.matrix import RECORDS, Combo
from samplecheck.tools.interactions import measure, table


def test_binding_names_the_ops_that_change_each_row():
    info = RECORDS["sampling_params"]
    placed, args = prepare(Combo(info, info.backends[0], torch.float32, "contig"), EVERYTHING_ON, torch.device("cpu"))
    binding = info.pipeline.binding(info.pipeline.reference(placed.view, **args))
    assert set(binding) == {"logit_bias", "penalties", "bad_words", "temperature", "min_p", "top_k_top_p"}
    assert all(rows.dtype == torch.bool and rows.shape == (placed.view.size(0),) for rows in binding.values())
    assert binding["logit_bias"].all() and binding["penalties"].tolist() == [True, False, False, False, True]
    # the every-op-on regression case reaches 9 of the 15 pairs
    assert len(binding_pairs(binding)) == 9 and binding_pairs(binding) <= set(OP_PAIRS), binding


def test_the_measurement_counts_pairs_over_drawn_cases():
    covered = measure(5, torch.device("cpu"))
    assert set(covered) <= set(OP_PAIRS) and all(0 < n <= 5 for n in covered.values())
    assert table(covered, 5).splitlines()[-1].startswith(f"{len(covered)} of 15 pairs reached")
