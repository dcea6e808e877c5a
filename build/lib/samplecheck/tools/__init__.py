"""The commands users run (`samplecheck SUBCOMMAND`): the sweep, the gate, the kill table, the
behaviour report and the calibration of the statistical tests."""
