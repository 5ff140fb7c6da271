"""Every result file under data/results/ records the command line that makes it and the git revision it was made at.
Three kinds of JSON live there:

- result files: what a results command wrote (`experiments`, `recipe-search`, `leak-control`, `lexical-sop`,
  `time-to-quality`, a benchmark), the raw records of `recipe-search probe|control` included. Each records
  `command` and `git_revision`, at the top or in its "meta" block: an `albert-mini` or `python benchmarks/`
  command line. A record written before its writer named the command says where the command it now carries came
  from (`command_source`), and so does the one record that no command line makes.
- run folders (a folder with run.json: `albert-mini pretrain`'s run record, its model's config.json and
  manifest.json, the model card's scores.json): run.json records the command that trained it; the other files
  describe the model of that run, not a result of their own.
- the run cache, experiment-runs/: one file per finished run, keyed on its settings and its kind's numerics version
  (never on the source code, so a finished run stays valid across commits): an input of the experiments, whose
  result files record the command and the revision. Recording a revision there would tie a run to a commit that
  the key deliberately ignores.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from albert_mini.commands import COMMANDS
from albert_mini.paths import DATA_ROOT

RESULTS = DATA_ROOT / "results"
CACHE = RESULTS / "experiment-runs"
REVISION = re.compile(r"^[0-9a-f]{7,40}(\+dirty)?$")


def run_folder(path: Path) -> Path | None:
    """The folder of a run that `path` belongs to (a folder below data/results/ holding run.json), else None."""
    for folder in path.parents:
        if folder == RESULTS:
            return None
        if (folder / "run.json").is_file():
            return folder
    return None


def classified() -> dict[str, list[Path]]:
    every = sorted(RESULTS.rglob("*.json"))
    cache = [p for p in every if p.is_relative_to(CACHE)]
    runs = [p for p in every if p not in cache and run_folder(p) is not None]
    return {"results": [p for p in every if p not in cache and p not in runs], "runs": runs, "cache": cache}


FILES = classified()


def provenance(path: Path) -> dict:
    record = json.loads(path.read_text(encoding="utf-8"))
    return record["meta"] if isinstance(record.get("meta"), dict) and "command" in record["meta"] else record


def test_every_json_under_data_results_is_classified_and_the_result_files_are_found():
    names = {p.relative_to(RESULTS).as_posix() for p in FILES["results"]}
    assert {"time_to_quality.json", "time_to_quality_15min.json", "recipe_search.json", "leak_control.json",
            "sentence_task.json", "recipe_search/base2.json"} <= names
    assert sum(map(len, FILES.values())) == len(list(RESULTS.rglob("*.json")))


@pytest.mark.parametrize("path", FILES["results"], ids=lambda p: p.relative_to(RESULTS).as_posix())
def test_every_result_file_records_its_command_and_git_revision(path):
    meta = provenance(path)
    command, revision = meta.get("command"), meta.get("git_revision")
    assert isinstance(command, str) and isinstance(revision, str), f"{path}: command {command!r}, revision {revision!r}"
    assert REVISION.match(revision), f"{path}: git_revision {revision!r} is not a commit"
    try:
        words = shlex.split(command)
    except ValueError:  # not a command line
        words = []
    if words[:1] == ["albert-mini"]:  # a command of the command table, which makes this file again
        assert words[1] in COMMANDS, f"{path}: {command}"
    elif words[:1] == ["python"]:  # a benchmark script of the checkout
        assert words[1].startswith("benchmarks/") and (RESULTS.parents[1] / words[1]).is_file(), f"{path}: {command}"
    else:
        assert meta.get("command_source"), f"{path}: {command!r} is no command line, and the file does not say why"
    for key in ("command_source", "git_revision_source"):
        assert key not in meta or (isinstance(meta[key], str) and meta[key]), f"{path}: {key}"


def test_run_folders_record_the_command_that_trained_them():
    folders = {run_folder(p) for p in FILES["runs"]}
    assert len(folders) >= 3
    for folder in folders:
        run = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        assert isinstance(run.get("command"), str) and "--" in run["command"], folder


def test_the_run_cache_holds_runs_keyed_on_settings_not_results():
    records = [p for p in FILES["cache"] if p.parent == CACHE]
    assert records
    for path in records:
        record = json.loads(path.read_text(encoding="utf-8"))
        assert {"spec", "version", "result"} <= set(record), path
        assert re.fullmatch(r"[0-9a-f]{24}\.json", path.name), path
    assert all(p.parent == CACHE or p.relative_to(CACHE).parts[0].startswith("trunk-") for p in FILES["cache"])


def test_a_recorded_command_is_the_command_line_as_a_shell_reads_it():
    from albert_mini.harness.experiments import command_line as experiments_command_line
    from albert_mini.harness.experiments.provenance import command_line

    assert command_line("time-to-quality", ["results", "a", "--machine", "AMD EPYC"]) == \
        "albert-mini time-to-quality results a --machine 'AMD EPYC'"
    assert experiments_command_line(["sharing", "--seeds", "0"]) == "albert-mini experiments sharing --seeds 0"


def test_the_time_to_quality_command_rebuilds_the_committed_file_from_its_runs():
    """Its command names the two committed run folders and the CPU their minutes are of (the results are rebuilt
    from them in tests/study/test_recipe_results.py)."""
    committed = json.loads((RESULTS / "time_to_quality.json").read_text(encoding="utf-8"))
    words = shlex.split(committed["command"])
    assert words[:3] == ["albert-mini", "time-to-quality", "results"] and "--overwrite" in words
    assert words[3:5] == [committed["runs"]["old"]["dir"], committed["runs"]["new"]["dir"]]
    assert words[words.index("--machine") + 1] == committed["machine"]


@pytest.mark.parametrize("path", sorted((RESULTS / "recipe_search").glob("*.json")), ids=lambda p: p.name)
def test_a_recipe_record_s_command_parses_back_to_its_recipe_and_length(path):
    """The records' commands were reconstructed from the records: each gives back what the record ran."""

    from albert_mini.commands.recipe_search import build_parser
    from albert_mini.harness.research.recipe_space import parse_settings

    record = json.loads(path.read_text(encoding="utf-8"))
    args = build_parser().parse_args(shlex.split(record["command"])[2:])
    recipe = parse_settings(args.set)
    given = {k: list(v) if isinstance(v, tuple) else v for k, v in recipe.record().items()}
    assert {k: given[k] for k in record["recipe"]} == record["recipe"]
    assert (f"{args.name}.json" if args.command == "probe" else f"control-{args.name}.json") == path.name
    if args.command == "probe":
        assert sum(recipe.steps_for(args.tokens)) == record["steps"]
        assert record["curve"][0]["step"] == record["steps"] // args.eval_points
    else:
        assert (args.steps, args.rule, args.train_pairs) == (record["steps"], record["rule"], record["train_pairs"])
        assert [row["step"] for row in record["log"] if "diag" in row][1] == args.every
