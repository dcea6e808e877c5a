"""Regression examples from nightly failures, written by `samplecheck regress` (never by
hand): (kernel name, `RegressionExample`) pairs, replayed by `with_regression_examples` in
the test templates each names, exactly like a record's own `examples`. Move an entry into
its kernel's record when that record is next edited."""

REGRESSIONS = (
)
