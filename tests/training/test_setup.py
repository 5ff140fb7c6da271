"""The one pretraining setup: the command line's flags are its fields, it is checked once, and the command line,
the experiments, the trunk and the recipe probes build their runs from it with the same builders."""

from __future__ import annotations

import ast
import dataclasses
import functools
from pathlib import Path

import pytest

import albert_mini
from albert_mini.commands.pretrain import build_parser
from albert_mini.errors import UsageError
from albert_mini.harness.experiments.budget import FAST, FULL, Budget
from albert_mini.harness.experiments.trunk import FAST_BRANCH, FAST_TRUNK, FULL_BRANCH, FULL_TRUNK
from albert_mini.harness.research.recipe_space import Recipe, nano_recipe
from albert_mini.training.setup import Phase, PretrainingSetup, cli_fields, curriculum, in_process

PACKAGE = Path(albert_mini.__file__).resolve().parent


def test_the_parser_has_one_flag_per_field_with_the_fields_defaults():
    parser = build_parser()
    flags = {a.dest: a for a in parser._actions if a.dest not in ("help", "debug")}  # a test may look inside
    assert list(flags) == [f.name for f in cli_fields()]
    for f in cli_fields():
        if f.name in ("steps", "out"):
            assert flags[f.name].required
        elif f.name == "corpus":
            assert flags[f.name].default == ["austen"]
        else:
            assert flags[f.name].default == f.default, f.name


@pytest.mark.parametrize("changes", [
    {},
    {"short_seq_len": 64, "short_fraction": 0.5, "lr": 5e-3, "warmup": 40},
    {"corpus": ("a.txt", "b/"), "tokenizer": "t.model", "validation": ("v.txt",), "split_by": "blank-line"},
    {"task": "none", "group_by_length": True, "bf16": True, "masking": "static", "dupe_factor": 4, "seed": 7},
])
def test_flags_and_setup_convert_both_ways(changes):
    setup = PretrainingSetup(steps=100, out="runs/x", **changes)
    parsed = PretrainingSetup.from_args(build_parser().parse_args(setup.to_argv()))
    assert parsed == setup


def test_run_json_records_every_flag_that_decides_the_numbers():
    # vars(args) less the flags free on resume, --config included when not given: a run resumes only with these.
    keys = {"accumulate", "batch_size", "bf16", "clip_norm", "config", "corpus", "dupe_factor", "group_by_length",
            "holdout_fraction", "lr", "masking", "optimizer", "output_bias", "preset", "seed", "seq_len",
            "short_fraction", "short_seq_len", "split_by", "steps", "task", "tokenizer", "validation", "warmup",
            "weight_decay"}
    settings = PretrainingSetup(steps=10, out="r", corpus=["a.txt"], tokenizer="t.model").settings()
    assert set(settings) == keys and settings["config"] == []
    assert list(settings) == sorted(settings)
    assert settings["corpus"] == ["a.txt"]  # a list, as JSON gives it back
    assert PretrainingSetup(steps=10, out="r").settings()["corpus"] == "austen"  # a named corpus is its name


@pytest.mark.parametrize("changes, message", [
    ({"steps": 0}, "--steps must be >= 1"),
    ({"warmup": 20}, "--warmup must be in [0, --steps=10]"),
    ({"seq_len": 1024}, "--seq-len must be in [8, 512]"),
    ({"short_seq_len": 48}, "--short-seq-len must be in [8, --seq-len=128) and divide it"),
    ({"short_seq_len": 64, "short_fraction": 1.0}, "--short-fraction must be in (0, 1)"),
    ({"corpus": ["austen", "x.txt"]}, "one named corpus"),
    ({"corpus": "synthetic", "short_seq_len": 64}, "--short-seq-len needs a text corpus"),
    ({"corpus": ["x.txt"]}, "needs --tokenizer"),
    ({"validation": ["v.txt"]}, "--validation applies to your own text"),
    ({"task": "mlm"}, "--task must be one of sop, nsp, none"),
    ({"lr": float("nan")}, "--lr must be a finite number > 0"),
    ({"dupe_factor": 3}, "--dupe-factor 3 needs --masking static"),
    ({"decay": "cosine"}, "decay must be one of linear, constant"),
])
def test_a_setup_that_cannot_work_is_refused_naming_the_setting(changes, message):
    with pytest.raises(UsageError) as error:
        PretrainingSetup(**{"steps": 10, "out": "r", **changes})
    assert message in str(error.value)


def test_replace_checks_again():
    setup = PretrainingSetup(steps=10)
    with pytest.raises(UsageError, match="--batch-size must be >= 1"):
        setup.replace(batch_size=0)


def test_curriculum_keeps_the_tokens_per_step_and_rounds_the_short_steps():
    assert curriculum(600, 128, 32, 64, 0.9) == (Phase(540, 64, 64), Phase(60, 128, 32))
    assert curriculum(5, 128, 32) == (Phase(5, 128, 32),)
    assert curriculum(3, 128, 32, 32, 0.5) == (Phase(2, 32, 128), Phase(1, 128, 32))  # round half to even
    first, then = curriculum(1000, 512, 8, 128, 0.9)
    assert first.tokens / first.steps == then.tokens / then.steps


@pytest.mark.parametrize("budget", [FULL, FAST, Budget(tokens=40 * 32 * 128, pretraining={"lr": 5e-3})])
def test_an_experiment_budget_is_an_override_of_the_setup(budget):
    setup = budget.setup("sop", seed=2)
    assert setup == in_process(corpus="austen", task="sop", seed=2, steps=setup.steps, warmup=setup.warmup,
                               log_every=setup.log_every, **budget.pretraining)  # the overrides, nothing else
    assert sum(p.tokens for p in setup.phases()) == budget.tokens == setup.steps * setup.batch_size * setup.seq_len
    assert setup.warmup == round(budget.warmup_fraction * setup.steps)
    assert setup.out is None and setup.quiet  # no run folder, no progress bar
    # The cache key is what the runs recorded: the overridden settings read from the setup itself.
    recorded = budget.settings()
    assert {k: recorded[k] for k in budget.pretraining} == budget.pretraining
    assert budget.as_dict()["short_steps"] == (setup.phases()[0].steps if setup.short_seq_len else 0)


def test_a_plan_overrides_only_what_its_cache_key_records():
    with pytest.raises(ValueError, match="not weight_decay"):
        Budget(tokens=40 * 32 * 128, pretraining={"weight_decay": 0.1})
    with pytest.raises(ValueError, match="not clip_norm"):
        dataclasses.replace(FULL_TRUNK, pretraining={**FULL_TRUNK.pretraining, "clip_norm": 0.5})
    with pytest.raises(ValueError, match="less than one batch of 4 x 64"):
        dataclasses.replace(FAST, tokens=10)
    with pytest.raises(UsageError, match="--short-seq-len"):  # checked where every setup is
        dataclasses.replace(FULL, pretraining={**FULL.pretraining, "short_seq_len": 48})


@pytest.mark.parametrize("trunk, branch", [(FULL_TRUNK, FULL_BRANCH), (FAST_TRUNK, FAST_BRANCH)])
def test_the_trunk_and_its_branches_are_setups_with_their_own_phases(trunk, branch):
    setup = trunk.setup(seed=0)
    short, long = setup.phases()
    assert (short.seq_len, long.seq_len) == (setup.short_seq_len, setup.seq_len) == (64, 128)
    assert short.steps == round(setup.short_fraction * setup.steps) and setup.task == "sop"
    assert {k: getattr(setup, k) for k in trunk.pretraining} == trunk.pretraining  # the overrides, as given
    none = trunk.setup("none", seed=1)  # MLM only on the same SOP-layout pairs, the sentence loss off
    assert (none.task, none.sentence_weight, none.steps) == ("sop", 0.0, trunk.settings()["schedule_steps"])
    assert branch.phases(trunk) == (Phase(branch.short_steps, short.seq_len, short.batch_size),
                                    Phase(branch.long_steps, long.seq_len, long.batch_size))
    assert trunk.tokens_until(trunk.stop) == trunk.stop * short.tokens // short.steps  # the trunk stops short


def test_a_recipe_probe_is_an_override_of_the_setup():
    recipe = nano_recipe(seq_len=64, long_seq_len=128, long_fraction=0.25, mlm_weight=0.5, decay="constant",
                         warmup=1000)
    short_steps, long_steps = recipe.steps_for(64 * 32 * 30 + 128 * 32 * 10)
    setup = recipe.setup(short_steps, long_steps)
    assert setup.phases() == (Phase(short_steps, 64, 32), Phase(long_steps, 128, 32))  # same batch, not tokens
    assert (setup.mlm_weight, setup.decay, setup.preset) == (0.5, "constant", "albert-nano")
    assert setup.warmup == setup.steps  # a warm-up longer than the probe is cut to it
    assert Recipe.of().setup(100).phases() == (Phase(100, 128, 32),)


def test_a_recipe_is_a_setup_plus_its_warm_up_and_long_phase_and_reads_back_from_its_record():
    recipe = nano_recipe(dropout=0.1, layers=3, long_seq_len=128, seq_len=64)
    config = recipe.setup(5).model_config()  # the setup says the model: the sizes are --config fields
    assert (config.num_hidden_layers, config.hidden_size, config.intermediate_size) == (3, 64, 256)
    assert config.hidden_dropout_prob == config.attention_probs_dropout_prob == 0.1
    record = recipe.record()
    assert (record["layers"], record["dropout"], record["seq_len"], record["long_seq_len"]) == (3, 0.1, 64, 128)
    assert Recipe.of(**record) == recipe and recipe.replace(layers=2) == nano_recipe(dropout=0.1, long_seq_len=128,
                                                                                     seq_len=64)
    with pytest.raises(UsageError, match="recipe: no field.s. short_seq_len; the fields are optimizer, lr"):
        Recipe.of(short_seq_len=64)  # the setup's name for it: a recipe says seq_len and long_seq_len
    with pytest.raises(UsageError, match="recipe: seq_len must be in .8, 128. for albert-nano"):
        nano_recipe(seq_len=512)


def test_masking_options_are_the_references_at_the_defaults():
    assert PretrainingSetup(steps=1).masking_options() == {}
    assert PretrainingSetup(steps=1, mask_prob=0.2, max_predictions=26).masking_options() == {
        "masked_lm_prob": 0.2, "ngram": 3, "max_predictions": 26}


def calls_of(name: str) -> set[str]:
    """The package modules (relative paths) that call `name(...)` anywhere."""
    return set(package_calls().get(name, ()))


@functools.cache
def package_calls() -> dict[str, set[str]]:
    """{called name: the package modules that call it}, from one parse of every module."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
                found.setdefault(called, set()).add(str(path.relative_to(PACKAGE)))
    return found


def test_schedule_model_and_loss_of_pretraining_are_built_in_one_place():
    # The curriculum's two-phase source, the pretraining model and the weighted loss each have one builder.
    # ... and Stage A's lever A2 (NSP for 500 steps, then SOP) is the one other two-phase stream
    assert calls_of("PhasedBatches") == {"training/run_data.py", "harness/experiments/levers.py"}
    assert calls_of("curriculum") == {"training/setup.py"}
    assert calls_of("build_pretraining_model") == {"training/run.py"} | {
        "harness/experiments/estimate.py"}  # the estimate times one step of an untrained model
    assert calls_of("pretraining_objective") <= {"training/objectives.py", "harness/research/model_card.py"}
    assert calls_of("init_sinusoidal_positions") == {"training/pretraining_model.py"}

