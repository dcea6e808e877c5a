"""What the kill table says about its own run (samplecheck.tools.killtable): its wall time
beside the time of its last kill, and its shared round's pytest output in a log headed by that
round's wall time, with pytest's slowest tests (where a round outlasting its kills spent its
time). The hunts are stand-ins here: no pytest run, no GPU."""

import dataclasses

from samplecheck.tools import killtable


def test_the_shared_round_leaves_its_output_and_slowest_tests_in_the_log(monkeypatch, tmp_path):
    commands = []

    def fake_run_until_done(command, env, timeout, done):
        commands.append(command)
        return "=== slowest 15 durations ===\n9.00s call t\n", "", 0

    monkeypatch.setattr(killtable, "run_until_done", fake_run_until_done)
    log = tmp_path / "shared.log"
    mutant = next(n for n, m in killtable.MUTANTS.items() if not m.faults_memory)
    assert killtable.hunt_shared([mutant], "cpu", "ci", workers=2, log=log) == {}, "no kill recorded"
    assert "--durations=15" in commands[0]
    text = log.read_text().splitlines()
    assert text[0].startswith("# the kill table's shared round: ") and text[0].endswith(" s wall (exited)")
    assert text[1].startswith("# ") and "--sc-mutant=" + mutant in text[1], "the command that reruns it"
    assert text[2:] == ["=== slowest 15 durations ===", "9.00s call t"]


def test_the_table_gives_its_wall_beside_its_last_kill(monkeypatch):
    names = sorted(killtable.MUTANTS)[:2]
    hunts = [killtable.Hunt(names[0], True, True, "t[a]", 12.4, ""),
             killtable.Hunt(names[1], True, True, "t[b]", 31.6, "")]
    monkeypatch.setattr(killtable, "hunt_all", lambda names, device, profile, workers, log=None: hunts)
    text, status = killtable.run(names, "cpu", "ci", 2)
    assert status == 0
    assert "2 of 2 run killed, 0 not run on this device; 0 s wall (the last kill at 32 s), 2 at once" in text


def test_a_mutant_whose_patch_does_not_apply_is_a_survivor_never_hunted(monkeypatch):
    """A stale patch target would make the mutant's tests fail on its import and read as a
    kill: the table names it, hunts nothing and exits 1."""
    live = next(n for n, m in killtable.MUTANTS.items() if "cpu" in m.devices and not m.faults_memory)
    stale = dataclasses.replace(killtable.MUTANTS[live], name="stale_patch", find="no such line in the kernel")
    monkeypatch.setitem(killtable.MUTANTS, "stale_patch", stale)
    ran = []
    monkeypatch.setattr(killtable, "run_until_done", lambda *args: ran.append(args) or ("", "", 0))
    monkeypatch.setattr(killtable.subprocess, "run", lambda *args, **kwargs: ran.append(args))
    text, status = killtable.run(["stale_patch"], "cpu", "ci", 2)
    assert status == 1 and ran == [], "nothing hunted, and the table fails"
    assert "0 of 1 run killed" in text
    assert "| stale_patch | " in text and "| PATCH FAILS | mutant stale_patch: patch target occurs 0 times" in text
