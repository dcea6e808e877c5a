"""GPU probes of third-party libraries' raw APIs (not our adapters), each a script that
measures one finding in docs/findings.md: `samplecheck probe NAME`."""
