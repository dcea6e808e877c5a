"""What every record speaks: the test names (catalog), the row layouts, the checks outputs are
compared with, and the records' vocabulary."""
