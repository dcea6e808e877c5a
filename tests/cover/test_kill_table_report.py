"""What the kill table says about its own run (samplecheck.tools.killtable): its wall time
beside the time of its last kill, and its shared round's pytest output in a log headed by that
round's wall time, with pytest's slowest tests (where a round outlasting its kills spent its
time). The hunts are stand-ins here: no pytest run, no GPU."""

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
