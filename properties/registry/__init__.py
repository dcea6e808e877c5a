"""What every record speaks: the test names (catalog), the row layouts, the checks outputs are
compared with, the records' vocabulary (records), the declared semantics a backend is judged
under, and the registered matrix the generic tests are parametrized over (matrix)."""
