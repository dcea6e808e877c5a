"""The names of samplecheck's property tests: one constant per test that records, marks,
regression examples and tools refer to.

A name here is the test function's name (what `Mark(test=...)`, `RegressionExample.tests`
and the registry parametrization match against); a generic property lives in the module
named after it (`tests/cover/<name>.py`), but for test_deterministic (in
test_row_isolation.py), test_repeated_calls_agree (test_repeatability.py) and
test_non_finite_never_drawn (test_gumbel.py).
tests/cover/test_catalog.py checks that every name below is a test function of
tests/cover, so a renamed test cannot leave a mark silently matching nothing.
"""

# Generic properties: every record, from the registry.
ORACLE_EQUIVALENCE = "test_oracle_equivalence"
STRIDED_BITWISE = "test_strided_bitwise"
EXACT_DISTRIBUTION = "test_exact_distribution"
ROW_ISOLATION = "test_row_isolation"
DETERMINISTIC = "test_deterministic"
DISTRIBUTION = "test_distribution"
MEMORY_BOUND = "test_memory_bound"
LARGE_OFFSETS = "test_large_offsets"
LARGE_LIST_OFFSETS = "test_large_list_offsets"
LARGE_LIST_OFFSETS_CHECKED = "test_large_list_offsets_checked"
LIST_OFFSETS_AT_SMALL_FAR = "test_list_offsets_at_small_far"
LIST_OFFSETS_CHECKED_AT_SMALL_FAR = "test_list_offsets_checked_at_small_far"
IDS_BEYOND_INT32 = "test_ids_beyond_int32"
ERROR_INPUTS = "test_error_inputs"
OFF_ENCODINGS = "test_off_encodings"
GRAPH_REPLAY = "test_graph_replay"
ENCLOSING_FLAG = "test_enclosing_flag"
MEMORY_SAFETY = "test_memory_safety"
RARE_EVENTS = "test_rare_events"
EMPTY_BATCH = "test_empty_batch"
LISTS_AT_CAPS = "test_lists_at_caps"
EDGE_VALUES = "test_edge_values"
BATCH_INVARIANCE = "test_batch_invariance"

# Kernel-specific properties named by records and backends.
REPEATED_CALLS_AGREE = "test_repeated_calls_agree"
ALL_NEG_INF_ROW = "test_all_neg_inf_row"
NON_FINITE_NEVER_DRAWN = "test_non_finite_never_drawn"
WHOLE_VOCAB_AT_262144 = "test_whole_vocab_at_262144"
WHOLE_VOCAB_MEMORY = "test_whole_vocab_memory_b64_v262144"
SAMPLED_OUTSIDE_THE_VOCAB = "test_sampled_outside_the_vocab_is_never_read"

# Tests that check a property above on other inputs (the regression examples' fixed edge
# rows; the drawn logits with each row's maximum moved to an end of the row; a case at each
# declared launch path's shape): a backend's marks and declarations for the property apply to
# them as well.
PROPERTY_OF = {"test_edge_values_on_regression_examples": EDGE_VALUES,
               "test_strided_bitwise_maxima_at_row_ends": STRIDED_BITWISE,
               "test_oracle_equivalence_under_gpu_math": ORACLE_EQUIVALENCE,
               "test_large_offsets_on_each_launch_path": LARGE_OFFSETS,
               "test_batch_invariance_on_each_launch_path": BATCH_INVARIANCE,
               "test_edge_values_on_each_launch_path": EDGE_VALUES}

# The properties of what a backend does with bad values (checked: they raise; unchecked: the
# documented handling): skipped together where a backend declares that its caller validates.
BAD_VALUE_TESTS = (ERROR_INPUTS, LARGE_LIST_OFFSETS_CHECKED, LIST_OFFSETS_CHECKED_AT_SMALL_FAR, IDS_BEYOND_INT32,
                   SAMPLED_OUTSIDE_THE_VOCAB)

# The exact properties: where a regression example is replayed unless it names its tests.
EXACT_TESTS = (ORACLE_EQUIVALENCE, STRIDED_BITWISE, EXACT_DISTRIBUTION)

NAMES = (ORACLE_EQUIVALENCE, STRIDED_BITWISE, EXACT_DISTRIBUTION, ROW_ISOLATION, DETERMINISTIC, DISTRIBUTION,
         MEMORY_BOUND, LARGE_OFFSETS, LARGE_LIST_OFFSETS, LARGE_LIST_OFFSETS_CHECKED, LIST_OFFSETS_AT_SMALL_FAR,
         LIST_OFFSETS_CHECKED_AT_SMALL_FAR, IDS_BEYOND_INT32, ERROR_INPUTS, OFF_ENCODINGS, GRAPH_REPLAY,
         ENCLOSING_FLAG, MEMORY_SAFETY, RARE_EVENTS, EMPTY_BATCH, LISTS_AT_CAPS, EDGE_VALUES, BATCH_INVARIANCE,
         REPEATED_CALLS_AGREE,
         ALL_NEG_INF_ROW, NON_FINITE_NEVER_DRAWN, WHOLE_VOCAB_AT_262144, WHOLE_VOCAB_MEMORY, SAMPLED_OUTSIDE_THE_VOCAB)
