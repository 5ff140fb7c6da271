"""The run cache keys runs on settings and a numerics version, not on source code: this guard is what makes that
safe. A change that moves what a kind of run computes must bump that kind's NUMERICS_VERSION (retiring its cached
runs) and rewrite the recorded values with `albert-mini numerics --write`."""

import json

import pytest

from albert_mini.commands import numerics as numerics_command
from albert_mini.harness.experiments import numerics
from albert_mini.harness.experiments.numerics import GUARD_FILE, TOLERANCE, guard_values
from albert_mini.harness.experiments.runs import NUMERICS_VERSION, RunCache, run_key
from cli_helpers import cli_error


@pytest.fixture(scope="module")
def measured():
    return guard_values()  # a minute or more (a few steps of every kind, one thread): its tests are marked slow


@pytest.mark.slow
def test_every_cached_kind_is_guarded(measured):
    recorded = json.loads(GUARD_FILE.read_text())
    assert set(recorded) == set(measured) == set(NUMERICS_VERSION)


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(NUMERICS_VERSION))
def test_numbers_move_only_with_a_version_bump(measured, kind):
    recorded = json.loads(GUARD_FILE.read_text())[kind]
    hint = (f"runs of kind {kind!r} now compute other numbers: bump NUMERICS_VERSION[{kind!r}] in "
            "albert_mini/harness/experiments/runs.py and run `albert-mini numerics --write`")
    if recorded["version"] != NUMERICS_VERSION[kind]:
        pytest.fail(f"NUMERICS_VERSION[{kind!r}] is {NUMERICS_VERSION[kind]} but the guard records version "
                    f"{recorded['version']}: run `albert-mini numerics --write`")
    # TOLERANCE (relative 1e-4): other CPUs sum in another order; a change of what a kind computes moves more.
    assert measured[kind]["values"] == pytest.approx(recorded["values"], rel=TOLERANCE), hint


def test_a_comment_anywhere_keeps_the_key(tmp_path):
    """The key reads the spec, the kind's version and the data manifests, nothing from the source files."""
    spec = {"kind": "pretraining", "config": {"hidden_size": 8}, "task": "sop", "seed": 0, "budget": {"tokens": 1}}
    cache = RunCache(tmp_path)
    cache.save(spec, {"marker": 1})
    assert cache.load(spec) == {"marker": 1} and cache.key(spec) == run_key(spec)
    other_kind = {**spec, "kind": "finetuning"}
    assert run_key(other_kind) != run_key(spec)
    with pytest.raises(ValueError, match="unknown kind"):
        run_key({**spec, "kind": "mystery"})


def test_a_version_bump_retires_only_that_kind(tmp_path, monkeypatch):
    spec = {"kind": "trunk", "seed": 0}
    other = {"kind": "branch", "seed": 0}
    cache = RunCache(tmp_path)
    cache.save(spec, {"marker": 1})
    cache.save(other, {"marker": 2})
    monkeypatch.setitem(NUMERICS_VERSION, "trunk", NUMERICS_VERSION["trunk"] + 1)
    assert cache.load(spec) is None and cache.load(other) == {"marker": 2}


# ---------------------------------------------------------------------- numerics --write
RECORDED = {"trunk": {"version": 2, "values": [7.117432, 6.506784639469845]},
            "finetuning": {"version": 1, "values": [1.377849, 0.375]}}


@pytest.fixture
def guard(tmp_path, monkeypatch):
    """A recorded guard in a temp file, and a way to set what measuring gives (no model is trained)."""
    path = tmp_path / "numerics_guard.json"
    path.write_text(json.dumps(RECORDED, indent=1) + "\n")
    monkeypatch.setattr(numerics, "GUARD_FILE", path)

    def measure_as(values):
        monkeypatch.setattr(numerics, "guard_values", lambda: json.loads(json.dumps(values)))
    return path, measure_as


def last_digits(values: dict) -> dict:
    """`values` as another CPU gives them: every float off by a few units of its 7th significant digit."""
    return {kind: {**v, "values": [x * (1 + 3e-7) if isinstance(x, float) else x for x in v["values"]]}
            for kind, v in values.items()}


def test_write_on_an_unchanged_tree_refuses_last_digit_variants_and_says_which(guard, capsys):
    path, measure_as = guard
    before = path.read_bytes()
    measure_as(last_digits(RECORDED))
    err = cli_error(numerics_command.main, ["--write"], capsys)
    assert "only within the guard's tolerance" in err and "--force" in err and "nothing written" in err
    assert path.read_bytes() == before
    measure_as(RECORDED)
    assert numerics_command.main(["--write"]) == 0
    assert "every value as recorded; nothing written" in capsys.readouterr().out and path.read_bytes() == before


def test_write_says_what_changed_by_how_much_and_keeps_rounding_unless_forced(guard, capsys):
    path, measure_as = guard
    measured = last_digits(RECORDED)
    measured["trunk"] = {"version": 3, "values": [7.2, 6.506784639469845]}  # a real change, with its version bump
    measure_as(measured)
    assert numerics_command.main(["--write"]) == 0
    out = capsys.readouterr().out
    assert "trunk: version 2 -> 3" in out and "trunk[0]: 7.117432 -> 7.2 (+0.0826, relative 1.2e-02, beyond" in out
    assert "finetuning[0]: 1.377849 -> " in out and "within the tolerance of 0.0001" in out
    assert "kept as recorded: finetuning" in out
    assert json.loads(path.read_text()) == {"trunk": measured["trunk"], "finetuning": RECORDED["finetuning"]}
    assert numerics_command.main(["--write", "--force"]) == 0
    assert json.loads(path.read_text()) == measured


def test_write_refuses_values_that_moved_without_a_version_bump(guard, capsys):
    path, measure_as = guard
    before = path.read_bytes()
    measure_as({**RECORDED, "finetuning": {"version": 1, "values": [1.5, 0.375]}})
    err = cli_error(numerics_command.main, ["--write"], capsys)
    assert err.startswith("error: finetuning moved beyond the tolerance") and "bump the version" in err
    assert path.read_bytes() == before
    assert cli_error(numerics_command.main, ["--force"], capsys).startswith("error: --force only goes with --write")
