"""The run cache keys runs on settings and a numerics version, not on source code: this guard is what makes that
safe. A change that moves what a kind of run computes must bump that kind's NUMERICS_VERSION (retiring its cached
runs) and rewrite the recorded values with `albert-mini numerics --write`."""

import json

import pytest

from albert_mini.harness.experiments.numerics import GUARD_FILE, guard_values
from albert_mini.harness.experiments.runs import NUMERICS_VERSION, RunCache, run_key


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
    # Relative 1e-4: other CPUs sum in another order (about 1e-6 here); any change of data, masks or
    # initialisation moves these values by far more.
    assert measured[kind]["values"] == pytest.approx(recorded["values"], rel=1e-4), hint


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
