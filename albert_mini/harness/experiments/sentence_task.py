"""Table 5 at mini scale: one trunk at the edge of SOP's escape, then branches with no sentence task, NSP or SOP
(see trunk.py), each fine-tuned downstream.

The plan, the named contrasts and the go/no-go thresholds (PLAN below) were written down and committed before any
of the runs. Every row is scored the same way on the same examples; the primary score of a sentence task is a
frozen linear probe on the pooled output at 64 tokens, on unmasked pairs. Seeds are the unit: a contrast is the
difference per seed with a t interval over seeds; McNemar's exact test per seed only where neither predictor
gives one answer to every pair.

The quote strata of every SOP score and the no-network baselines beside them (strata.py) were added after the runs
by the SOP plateau study, read from the per-pair scores the records already hold: a reading of the same numbers, not
part of the pre-registered analysis; no run's key or numbers changed.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from pathlib import Path

from ...settings import fast_mode
from ...study.figure_style import book_figure, book_style
from ...study.paper import TABLE5
from ...study.results import table5_decisions, table5_glance
from ...study.stats import discordant, mcnemar_exact, seed_summary, wilson_interval
from ...tasks.scoring import constant_head
from .budget import FAST
from .finetune import CHANCE, finetune_settings
from .measure import pair_baselines
from .runs import run_key, workers
from .strata import baselines as no_network_baselines
from .strata import strata_values
from .trunk import (
    DOWNSTREAM,
    FAST_BRANCH,
    FAST_TRUNK,
    FULL_BRANCH,
    FULL_TRUNK,
    LENGTHS,
    ROWS,
    TRUNK_SEED,
    BranchPlan,
    TrunkPlan,
    scored_pairs,
    train_branch,
    train_trunk,
    trunk_checkpoint,
    trunk_config,
)

MIN_PILOT_SOP = 0.55  # the seed-0 SOP branch's primary SOP after its short phase, below which branches lengthen
EXTRA_SEEDS = (3, 4)  # added when SOP minus none on NSP straddles 0 with a positive mean
# The pre-registered contrasts: (model A, model B, the task both are scored on).
CONTRASTS = {"sop_vs_nsp_on_sop": ("sop", "nsp", "sop"), "nsp_vs_none_on_sop": ("nsp", "none", "sop"),
             "sop_vs_none_on_nsp": ("sop", "none", "nsp")}
DOWNSTREAM_CONTRASTS = {"sop_minus_nsp": ("sop", "nsp"), "sop_minus_none": ("sop", "none")}

PLAN = {
    "trunk": "the classroom recipe (albert-mini, MLM + SOP, LAMB 5e-3, 125 warm-up steps, a 5,000-step schedule, "
             "64 x 64-token batches, seed 0) stopped at step 3,000 with its whole checkpoint (weights, LAMB "
             "moments, step)",
    "branch_point": "step 3,000 if the trunk's SOP head and its SOP probe (pooled, 64 tokens, unmasked pairs) both "
                    "have a 95% Wilson interval containing 50%; otherwise step 2,500",
    "branches": "from the branch point, the trunk's optimizer state and schedule continued for 1,250 steps of "
                "64 x 64 tokens, then 250 steps of 32 x 128; a fresh sentence classifier (drawn from the seed), the "
                "trunk's pooler; rows: MLM + SOP, MLM + NSP, MLM only on the same SOP-layout pairs with the "
                "sentence loss off; seeds 0, 1, 2 set data order, masks and head, and the three rows of a seed "
                "share them (the NSP row's pairs come from the NSP builder with the same seed)",
    "go_no_go": f"the seed-0 SOP branch runs first; if its primary SOP after the 64-token phase is below "
                f"{MIN_PILOT_SOP:.0%}, every branch's 64-token phase is lengthened to 1,750 steps; if the lengthened "
                "branch is still at chance (95% Wilson interval containing 50%), no other branch runs and the "
                "evidence is recorded",
    "primary_score": "a frozen linear probe on the pooled [CLS] output, fitted on the same training pairs and scored "
                     "on every validation and test pair, at 64 tokens, on unmasked pairs, for every row; beside it "
                     "the same at 128 tokens, on masked pairs, a probe on the mean of the last layer, and each "
                     "model's own trained head",
    "contrasts": {name: f"{a} minus {b}, scored on {on.upper()}" for name, (a, b, on) in CONTRASTS.items()},
    "extra_seeds": f"if sop_vs_none_on_nsp's t interval over seeds straddles 0 with a positive mean, add seeds "
                   f"{EXTRA_SEEDS[0]} and {EXTRA_SEEDS[1]}",
    "downstream": "each branch of every seed fine-tuned on austen-mc (several sentences) and polarity (one "
                  "sentence) with the fine-tuning experiment's budget; SOP minus NSP and SOP minus none per task",
    "targets": ["the SOP branch scores at least 60% on SOP (primary) in every seed; moonshot 65%",
                "the NSP branch scores within 3 points of none on SOP",
                "the SOP branch scores above none on NSP with a t interval over seeds clear of 0",
                "on austen-mc the SOP branch scores above the NSP branch in the mean"],
}


def plans(budget=None) -> tuple[TrunkPlan, BranchPlan]:
    """The trunk and branch plans that go with a budget: the fast ones with the fast budget (tests), else full."""
    fast = fast_mode() if budget is None else budget == FAST
    return (FAST_TRUNK, FAST_BRANCH) if fast else (FULL_TRUNK, FULL_BRANCH)


def describe_budget(budget) -> dict:
    """What meta.budget records for this experiment: its own plans, not the Tables 3-4 budget."""
    trunk, branch = plans(budget)
    return {"trunk": trunk.settings(), "branch": dataclasses.asdict(branch),
            "trunk_tokens": trunk.tokens_until(trunk.stop)}


# ---------------------------------------------------------------------------------------------- run specs
def trunk_spec(trunk: TrunkPlan) -> dict:
    return {"kind": "trunk", "recipe": "classroom", "config": trunk_config().to_dict(), "seed": TRUNK_SEED,
            "plan": trunk.settings()}


def branch_spec(trunk_key: str, point: int, row: str, seed: int, branch: BranchPlan, budget) -> dict:
    downstream = {task: dataclasses.asdict(finetune_settings(budget, seed)[task]) for task in DOWNSTREAM}
    return {"kind": "branch", "trunk": trunk_key, "branch_point": point, "row": row, "seed": seed,
            "plan": dataclasses.asdict(branch), "downstream": downstream}


@dataclass(frozen=True)
class PlannedRun:
    """One run of this experiment as the estimate sees it: its spec and its training tokens per length."""

    label: str
    run_spec: dict
    tokens_by_length: dict

    def spec(self, *_) -> dict:
        return self.run_spec


def plan(budget, seeds) -> list[PlannedRun]:
    """The runs, for the estimate and the progress count: the trunk, then a branch per row and seed, with the
    go/no-go decisions already taken read from the finished runs."""
    from .runs import RunCache, cache_dir

    trunk, branch = plans(budget)
    spec = trunk_spec(trunk)
    short, long = trunk.setup().phases()
    runs = [PlannedRun("trunk", spec, {short.seq_len: trunk.tokens_until(trunk.stop)})]
    cache = RunCache(cache_dir())
    trunk_record = cache.load(spec)
    point = branch_point(trunk_record, trunk)[0] if trunk_record else trunk.stop
    def planned(row, seed, branch):
        b_short, b_long = branch.phases(trunk)
        return PlannedRun(f"branch {row} seed {seed}", branch_spec(run_key(spec), point, row, seed, branch, budget),
                          {b_short.seq_len: b_short.tokens, b_long.seq_len: b_long.tokens})

    pilot = cache.load(branch_spec(run_key(spec), point, "sop", seeds[0], branch, budget))
    if pilot is not None and pilot_decision(pilot, branch) == "lengthen":
        runs.append(planned("sop", seeds[0], branch))
        branch = dataclasses.replace(branch, short_steps=branch.lengthened)
        pilot = cache.load(branch_spec(run_key(spec), point, "sop", seeds[0], branch, budget))
        if pilot is not None and pilot_decision(pilot, branch) == "stop":
            return runs + [planned("sop", seeds[0], branch)]  # the pre-registered stop: no other branch
    return runs + [planned(row, seed, branch) for seed in seeds for row in ROWS]


def planned_trunk(budget) -> tuple[PlannedRun, int, dict]:
    """For the plan of an experiment branching from the trunk: the trunk as a planned run, its branch point (the
    plan's stop while the trunk has not run) and a branch's training tokens per length."""
    from .runs import RunCache, cache_dir

    trunk, branch = plans(budget)
    spec = trunk_spec(trunk)
    record = RunCache(cache_dir()).load(spec)
    point = branch_point(record, trunk)[0] if record else trunk.stop
    short, long = branch.phases(trunk)
    trunk_tokens = {trunk.setup().phases()[0].seq_len: trunk.tokens_until(trunk.stop)}
    return PlannedRun("trunk", spec, trunk_tokens), point, {short.seq_len: short.tokens, long.seq_len: long.tokens}


# ---------------------------------------------------------------------------------------------- reading a record
def entry(record: dict, task: str, length: int = 64, masked: bool = False, score: str = "probe_pooled") -> dict:
    """One score of a record: task at a length, on unmasked or masked pairs, by a probe or the own head."""
    return record[f"sentence_{length}"][f"{task}_{'masked' if masked else 'unmasked'}"][score]


def at_chance(score: dict) -> bool:
    """Whether a score's 95% Wilson interval contains 50%."""
    low, high = wilson(score)
    return low <= 0.5 <= high


def wilson(score: dict) -> list[float]:
    """The 95% Wilson interval of a score, from its per-pair correctness."""
    return list(wilson_interval(score["correct"].count("1"), len(score["correct"])))


# ---------------------------------------------------------------------------------------------- go / no-go
def trunk_point(trunk: dict, step: int) -> dict:
    return next(p for p in trunk["probes"] if p["step"] == step)


def branch_point(trunk: dict, plan: TrunkPlan) -> tuple[int, dict]:
    """(the branch point, the evidence): plan.stop while the trunk's SOP head and probe are both at chance there."""
    point = trunk_point(trunk, plan.stop)
    head, probe = entry(point, "sop", score="head"), entry(point, "sop")
    evidence = {"checked_at": plan.stop, "sop_head": head["accuracy"], "sop_head_wilson": wilson(head),
                "sop_probe": probe["accuracy"], "sop_probe_wilson": wilson(probe)}
    chosen = plan.stop if at_chance(head) and at_chance(probe) else plan.fallback_stop
    return chosen, {**evidence, "rule": PLAN["branch_point"], "decision": f"branch from step {chosen}"}


def pilot_decision(pilot: dict, branch: BranchPlan) -> str:
    """"go", "lengthen" (below MIN_PILOT_SOP after the short phase) or "stop" (lengthened and still at chance).

    The fast plan (tests) always goes on, so that a test run reaches every step of the experiment; the rule
    itself is tested on hand-made records."""
    score = entry(pilot["after_short"], "sop")
    if score["accuracy"] >= MIN_PILOT_SOP or branch == FAST_BRANCH:
        return "go"
    if branch.short_steps == branch.lengthened:
        return "stop" if at_chance(score) else "go"
    return "lengthen"


def needs_extra_seeds(contrast_result: dict) -> bool:
    """Whether SOP minus none on NSP straddles 0 with a positive mean (then seeds 3 and 4 are added)."""
    d = contrast_result["difference"]
    return d["ci95"] is not None and d["mean"] > 0 and d["ci95"][0] < 0 < d["ci95"][1]


# ---------------------------------------------------------------------------------------------- a diagnostic
# Not pre-registered: after the stop, the trunk itself continued from its step-3,000 checkpoint on its own data
# stream with its own sentence head, i.e. the classroom recipe uninterrupted, to see whether SOP leaves chance.
CONTINUED_TRUNK = dataclasses.replace(FULL_TRUNK, stop=4500, probe_at=(3500, 4000, 4500))


def continued_trunk(cache, train: bool = False) -> dict | None:
    """The full trunk continued to CONTINUED_TRUNK.stop from its step-3,000 checkpoint (trained only if asked)."""
    import shutil
    import time

    spec = trunk_spec(CONTINUED_TRUNK)
    found = cache.load(spec)
    if found is not None or not train:
        return found
    source = cache.folder / f"trunk-{run_key(trunk_spec(FULL_TRUNK))}"
    folder = cache.folder / f"trunk-{run_key(spec)}"
    start_checkpoint = trunk_checkpoint(source, FULL_TRUNK.stop)
    if not start_checkpoint.exists():
        raise FileNotFoundError(f"{start_checkpoint} is missing: run the sentence_task experiment first")
    if not folder.exists():
        shutil.copytree(start_checkpoint, trunk_checkpoint(folder, FULL_TRUNK.stop))
        for name in ("probes.json", "metrics.jsonl"):
            shutil.copy(source / name, folder / name)
    started = time.perf_counter()
    result = train_trunk(CONTINUED_TRUNK, folder)
    cache.save(spec, result, time.perf_counter() - started)
    return result


# ---------------------------------------------------------------------------------------------- the experiment
def trunk_folder(runner, spec: dict) -> Path:
    """The trunk's run folder (its checkpoints and probe scores) beside the finished runs; without a run cache
    (--no-cache) a temporary folder, deleted when the process ends (its branches are trained by then)."""
    if runner.cache is None:
        from ...paths import process_folder

        return process_folder("albert-mini-trunk-")
    return runner.cache.folder / f"trunk-{run_key(spec)}"


@dataclass(frozen=True)
class TrunkStart:
    """The finished trunk that branches start from (Table 5 v3 and the SOP plateau study's two stages): its plans,
    its run key and record, the branch point its rule chose (with the evidence) and that step's checkpoint."""

    plan: TrunkPlan
    branch: BranchPlan
    key: str
    record: dict
    point: int
    evidence: dict
    folder: Path
    checkpoint: Path

    def ensure_checkpoint(self, runner, specs) -> None:
        """Train the trunk again when a branch of `specs` has still to run and the checkpoint is not here."""
        pending = any(runner.cache is None or runner.cache.load(s) is None for s in specs)
        if pending and not self.checkpoint.exists():
            train_trunk(self.plan, self.folder)


def trunk_start(runner) -> TrunkStart:
    """The trunk of the runner's budget, trained once (or read from the run cache), and its branch point."""
    trunk_plan, branch_plan = plans(runner.budget)
    spec = trunk_spec(trunk_plan)
    folder = trunk_folder(runner, spec)
    record = runner.cached(spec, functools.partial(train_trunk, trunk_plan, folder), "trunk (classroom recipe)")
    point, evidence = branch_point(record, trunk_plan)
    return TrunkStart(trunk_plan, branch_plan, run_key(spec), record, point, evidence, folder,
                      trunk_checkpoint(folder, point))


def run(runner) -> dict:
    start = trunk_start(runner)
    trunk_plan, branch_plan, trunk, point = start.plan, start.branch, start.record, start.point
    decisions = [{"step": "branch point", **start.evidence}]

    def jobs(rows, seeds, plan):
        specs = [(branch_spec(start.key, point, row, seed, plan, runner.budget), row, seed)
                 for seed in seeds for row in rows]
        start.ensure_checkpoint(runner, [s for s, _, _ in specs])
        return [(s, functools.partial(train_branch, start.checkpoint, row, seed, trunk_plan, plan, runner.budget),
                 f"branch {row} seed {seed}") for s, row, seed in specs]

    seeds = list(runner.seeds)
    if workers() > 1:  # every branch at once; the decision below still reads the seed-0 SOP branch alone
        runner.cached_all(jobs(ROWS, seeds, branch_plan))
    pilot = runner.cached_all(jobs(["sop"], seeds[:1], branch_plan))[0]
    decision = pilot_decision(pilot, branch_plan)
    decisions.append(pilot_evidence(pilot, branch_plan, decision))
    if decision == "lengthen":
        branch_plan = dataclasses.replace(branch_plan, short_steps=branch_plan.lengthened)
        pilot = runner.cached_all(jobs(["sop"], seeds[:1], branch_plan))[0]
        decision = pilot_decision(pilot, branch_plan)
        decisions.append(pilot_evidence(pilot, branch_plan, decision))
    result = {"plan": PLAN, "decisions": decisions, "trunk": trunk_summary(trunk, point, trunk_plan),
              "plans": {"trunk": trunk_plan.settings(), "branch": dataclasses.asdict(branch_plan)},
              "baselines": {task: baselines(task, trunk_plan) for task in ("sop", "nsp")}}
    if decision == "stop":
        continued = continued_trunk(runner.cache) if runner.cache and runner.budget != FAST else None
        return {**result, "stopped": "the lengthened seed-0 SOP branch stayed at chance: no other branch was run",
                "pilot": {**row_values(pilot), **strata_values(pilot, trunk_plan),
                          "sop_after_short": entry(pilot["after_short"], "sop")["accuracy"],
                          "constant": constants(pilot), "curve": pilot["curve"], "steps": pilot["steps"],
                          "downstream": {t: pilot["downstream"][t]["accuracy"] for t in DOWNSTREAM}},
                "exploratory": exploratory(runner, start.key, point, seeds),
                "continued_trunk": trunk_summary(continued, CONTINUED_TRUNK.stop, CONTINUED_TRUNK) if continued
                else None}
    records = collect(runner.cached_all(jobs(ROWS, seeds, branch_plan)), ROWS, seeds)
    contrasts = {name: contrast(records, a, b, on) for name, (a, b, on) in CONTRASTS.items()}
    if needs_extra_seeds(contrasts["sop_vs_none_on_nsp"]) and not set(EXTRA_SEEDS) & set(seeds):
        decisions.append({"step": "extra seeds", "rule": PLAN["extra_seeds"],
                          "difference": contrasts["sop_vs_none_on_nsp"]["difference"],
                          "decision": f"add seeds {EXTRA_SEEDS[0]} and {EXTRA_SEEDS[1]}"})
        seeds += list(EXTRA_SEEDS)
        records = collect(runner.cached_all(jobs(ROWS, seeds, branch_plan)), ROWS, seeds)
        contrasts = {name: contrast(records, a, b, on) for name, (a, b, on) in CONTRASTS.items()}
    rows = {"trunk": trunk_row(trunk, point, trunk_plan),
            **{row: branch_row(row, records[row], trunk_plan) for row in ROWS}}
    return {**result, "seeds": seeds, "rows": rows, "contrasts": contrasts,
            "contrasts_128": {name: contrast(records, a, b, on, length=128)
                              for name, (a, b, on) in CONTRASTS.items()},
            "downstream": downstream_rows(records), "chance": CHANCE,
            "scoring": PLAN["primary_score"],
            "paired_test": "per contrast: the difference per seed and a t interval over seeds (seeds are the unit); "
                           "McNemar's exact test per seed on the same held-out pairs as supporting evidence; no "
                           "test where a predictor gives one answer to every pair"}


def exploratory(runner, trunk_key: str, point: int, seeds) -> dict | None:
    """Branches of the first plan found finished (on a GPU every branch ran beside the seed-0 SOP branch), read
    only after the pre-registered analysis stopped: labelled exploratory, never a finding of Table 5."""
    if runner.cache is None:
        return None
    branch_plan = plans(runner.budget)[1]
    found = {}
    for seed in seeds:
        for row in ROWS:
            record = runner.cache.load(branch_spec(trunk_key, point, row, seed, branch_plan, runner.budget))
            if record is not None:
                found.setdefault(row, {})[seed] = record
    if set(found) != set(ROWS):
        return None
    return {"note": "not part of the pre-registered analysis: the seed-0 SOP branch decided to lengthen and then "
                    "to stop; these branches of the first plan ran beside it on the GPU and are shown as they are",
            "short_steps": branch_plan.short_steps,
            "rows": {row: branch_row(row, found[row], plans(runner.budget)[0]) for row in ROWS},
            "contrasts": {name: contrast(found, a, b, on) for name, (a, b, on) in CONTRASTS.items()},
            "downstream": downstream_rows(found)}


def collect(results: list[dict], rows, seeds) -> dict[str, dict[int, dict]]:
    """{row: {seed: record}} from results in jobs order (seed-major, then row)."""
    records: dict[str, dict[int, dict]] = {row: {} for row in rows}
    for (seed, row), record in zip([(s, r) for s in seeds for r in rows], results):
        records[row][seed] = record
    return records


def pilot_evidence(pilot: dict, plan: BranchPlan, decision: str) -> dict:
    score = entry(pilot["after_short"], "sop")
    return {"step": f"seed-0 SOP branch after {plan.short_steps} short steps", "sop": score["accuracy"],
            "sop_wilson": wilson(score), "threshold": MIN_PILOT_SOP, "rule": PLAN["go_no_go"], "decision": decision}


# ---------------------------------------------------------------------------------------------- rows and contrasts
def row_values(record: dict) -> dict:
    """The metrics of one model: `sop`/`nsp` hold the primary score (pooled probe, 64 tokens, unmasked pairs)."""
    values = {}
    for T in LENGTHS:
        if f"sentence_{T}" not in record:
            continue
        tail = "" if T == 64 else f"_{T}"
        for task in ("sop", "nsp"):
            values[f"{task}{tail}"] = entry(record, task, T)["accuracy"]
            values[f"{task}_masked{tail}"] = entry(record, task, T, masked=True)["accuracy"]
            values[f"{task}_mean{tail}"] = entry(record, task, T, score="probe_mean")["accuracy"]
            if "head" in record[f"sentence_{T}"][f"{task}_unmasked"]:
                values[f"{task}_head{tail}"] = entry(record, task, T, score="head")["accuracy"]
                values[f"{task}_head_masked{tail}"] = entry(record, task, T, masked=True, score="head")["accuracy"]
        values[f"mlm_acc{tail}"] = record[f"mlm_{T}"]["acc"]
        values[f"mlm_loss{tail}"] = record[f"mlm_{T}"]["loss"]
    return values


def constants(record: dict) -> dict:
    """Which of a record's predictors gave one answer to every pair, by metric name."""
    out = {}
    for T in LENGTHS:
        tail = "" if T == 64 else f"_{T}"
        for key, scores in record.get(f"sentence_{T}", {}).items():
            task, masking = key.split("_")
            for score, name in (("probe_pooled", ""), ("probe_mean", "_mean"), ("head", "_head")):
                if score in scores and constant_head(scores[score]):
                    out[f"{task}{name}{'_masked' if masking == 'masked' else ''}{tail}"] = True
    return out


def summarise(per_seed: dict[str, dict]) -> dict:
    keys = sorted({k for values in per_seed.values() for k in values if isinstance(values[k], float)})
    return {k: seed_summary([v[k] for v in per_seed.values() if k in v]) for k in keys}


def branch_row(row: str, recs: dict[int, dict], plan: TrunkPlan) -> dict:
    """A row's metrics per seed (with the quote strata of its SOP scores) and their summaries over seeds."""
    per_seed = {}
    for seed, record in sorted(recs.items()):
        values = {**row_values(record), **strata_values(record, plan)}
        values["sop_after_short"] = entry(record["after_short"], "sop")["accuracy"]
        values["constant"] = constants(record)
        values["wilson"] = {t: wilson(entry(record, t)) for t in ("sop", "nsp")}
        per_seed[str(seed)] = values
    first = recs[min(recs)]
    return {"per_seed": per_seed, **summarise(per_seed), "method": method(row),
            "examples": {t: first["sentence_64"][f"{t}_unmasked"]["examples"] for t in ("sop", "nsp")},
            "examples_128": {t: first["sentence_128"][f"{t}_unmasked"]["examples"] for t in ("sop", "nsp")},
            "label_share": {t: first["sentence_64"][f"{t}_unmasked"]["label_share"] for t in ("sop", "nsp")},
            "mlm_tokens": first["mlm_64"]["tokens"], "mlm_tokens_128": first["mlm_128"]["tokens"],
            "start_step": first["start_step"], "steps": first["steps"], "tokens": first["tokens"],
            "train_seconds": [recs[s]["train_seconds"] for s in sorted(recs)], "curve": first["curve"]}


def trunk_row(trunk: dict, point: int, plan: TrunkPlan) -> dict:
    """The trunk at the branch point as a row of its own: one model, so no spread over seeds."""
    record = trunk_point(trunk, point)
    values = {**row_values(record), **strata_values(record, plan), "constant": constants(record),
              "wilson": {t: wilson(entry(record, t)) for t in ("sop", "nsp")}}
    per_seed = {str(TRUNK_SEED): values}
    return {"per_seed": per_seed, **summarise(per_seed), "method": method("trunk"), "step": point,
            "examples": {t: record["sentence_64"][f"{t}_unmasked"]["examples"] for t in ("sop", "nsp")}}


def method(row: str) -> dict:
    own = {"trunk": "sop", "none": None}.get(row, row)
    return {t: "linear probe on the frozen pooled output (primary)" + (
        "; the row's own trained head beside it" if t == own else "") for t in ("sop", "nsp")}


def contrast(records, a: str, b: str, on: str, length: int = 64) -> dict:
    """A minus B on task `on`, seed by seed (primary scores): the t interval over seeds, and McNemar per seed where
    neither predictor is constant."""
    seeds = sorted(set(records[a]) & set(records[b]))
    per_seed = {}
    for seed in seeds:
        sa, sb = entry(records[a][seed], on, length), entry(records[b][seed], on, length)
        only_a, only_b = discordant(sa["correct"], sb["correct"])
        tested = not (constant_head(sa) or constant_head(sb))
        per_seed[str(seed)] = {"difference": sa["accuracy"] - sb["accuracy"], "only_a": only_a, "only_b": only_b,
                               "mcnemar_p": mcnemar_exact(only_a, only_b) if tested else None,
                               "constant": {a: constant_head(sa), b: constant_head(sb)}}
    summary = seed_summary([v["difference"] for v in per_seed.values()])
    return {"a": a, "b": b, "task": on, "length": length, "per_seed": per_seed, "difference": summary}


def downstream_rows(records: dict[str, dict[int, dict]]) -> dict:
    """downstream/<task>/<row>/per_seed/<seed>/accuracy, each row's summary, and the named differences per seed."""
    out = {}
    for task in DOWNSTREAM:
        rows = {}
        for row in ROWS:
            per_seed = {str(s): {"accuracy": r["downstream"][task]["accuracy"],
                                 "constant": len(r["downstream"][task].get("answers", [0, 1])) == 1}
                        for s, r in sorted(records[row].items())}
            rows[row] = {"per_seed": per_seed, "accuracy": seed_summary([v["accuracy"] for v in per_seed.values()]),
                         "settings": records[row][min(records[row])]["downstream"][task]["settings"]}
        for name, (a, b) in DOWNSTREAM_CONTRASTS.items():
            seeds = sorted(set(records[a]) & set(records[b]))
            rows[name] = seed_summary([records[a][s]["downstream"][task]["accuracy"]
                                       - records[b][s]["downstream"][task]["accuracy"] for s in seeds])
        out[task] = rows
    return out


def baselines(task: str, plan: TrunkPlan) -> dict:
    """No-network baselines on the held-out pairs: at 64 tokens the majority label and a word-overlap stump (as v3
    reported them), and under `no_network`, at each length, the readers of strata.baselines (majority training
    label, the quote-state rule and the surface regression for SOP, the topic features for NSP) on all pairs and
    on the quote strata."""
    _, test_y, test = scored_pairs(task, "held_out", 64, False, plan)
    _, train_y, train = scored_pairs(task, "probe", 64, False, plan)
    return {**pair_baselines(train, train_y, test, test_y),
            "no_network": {str(T): no_network_baselines(task, plan, T) for T in LENGTHS}}


def trunk_summary(trunk: dict, point: int, plan: TrunkPlan) -> dict:
    """The trunk's curve: MLM and SOP (head and probes, with the quote strata) at both lengths at each scoring
    point."""
    points = []
    for p in trunk["probes"]:
        values = {**row_values(p), **strata_values(p, plan)}
        points.append({"step": p["step"], "tokens": p["tokens"], **values,
                       "sop_head_wilson": wilson(entry(p, "sop", score="head")),
                       "sop_wilson": wilson(entry(p, "sop"))})
    return {"points": points, "branch_point": point, "tokens": trunk["tokens"], "steps": trunk["steps"],
            "train_seconds": trunk["train_seconds"], "curve": trunk["curve"]}


# ---------------------------------------------------------------------------------------------- figure and table
def figure(result: dict):
    """Left: SOP along the trunk (and its continuation); right: every row on SOP and NSP, one dot per seed."""
    fig, (left, right) = book_figure(2, 1, height=7.6)
    with book_style():
        draw(result, left, right)
        fig.tight_layout()
    return fig


def draw(result: dict, left, right) -> None:
    trunks = [("trunk", result["trunk"]["points"], "-")]
    if result.get("continued_trunk"):
        later = [p for p in result["continued_trunk"]["points"] if p["step"] > result["trunk"]["branch_point"]]
        trunks.append(("continued", [result["trunk"]["points"][-1], *later], "--"))
    for name, points, style in trunks:
        steps = [p["step"] for p in points]
        for key, label, colour in (("sop_head", "SOP head", "tab:blue"), ("sop", "SOP probe", "tab:orange")):
            left.plot(steps, [100 * p[key] for p in points], style, marker="o", color=colour,
                      label=label if name == "trunk" else None)
    left.axhline(50, color="grey", ls=":", lw=1)
    left.axvline(result["trunk"]["branch_point"], color="black", ls=":", lw=1)
    shown = [100 * p[key] for _, points, _ in trunks for p in points for key in ("sop_head", "sop")]
    left.set(xlabel="step of the recipe", ylabel="held-out SOP %, 64 tokens", ylim=holding(shown),
             title="SOP along the trunk")
    left.legend(loc="upper left", ncols=2)
    rows = result.get("rows") or (result.get("exploratory") or {}).get("rows")
    if rows:
        names = list(rows)
        dots = [100 * v for row in rows.values() for task in ("sop", "nsp") for v in row[task]["values"]]
        for offset, task, colour in ((-0.15, "sop", "tab:blue"), (0.15, "nsp", "tab:orange")):
            for i, name in enumerate(names):
                values = [100 * v for v in rows[name][task]["values"]]
                right.scatter([i + offset] * len(values), values, color=colour, s=18,
                              label=task.upper() if i == 0 else None)
        right.axhline(50, color="grey", ls=":", lw=1)
        title = "Rows, one dot per seed" if result.get("rows") else "Exploratory branches"
        right.set(xticks=range(len(names)), xticklabels=names, ylabel="probe accuracy %, 64 tokens",
                  ylim=holding(dots), title=title)
        right.legend(loc="upper left", ncols=2)


def holding(values: list[float]) -> tuple[float, float]:
    """y limits in percent that hold every value with room for the legend above it: 40-70 or wider, in steps of 5."""
    return (min(40, 5 * math.floor((min(values) - 2) / 5)), max(70, 5 * math.ceil((max(values) + 6) / 5)))


def table(result: dict) -> str:
    def cell(row, key):
        if key not in row:
            return "-"
        s = row[key]
        return f"{100 * s['mean']:.1f}" + (f" ± {100 * s['std']:.1f}" if s["std"] is not None else "")

    title = "### Sentence task (Table 5 analog: a trunk at the edge of SOP's escape and its branches)"
    if "rows" not in result:
        return "\n".join([title, "", *[f"- {line}" for line in table5_decisions(result)], "",
                          table5_glance(result), "", f"Stopped: {result['stopped']}."])
    out = [title, "", "| row | MLM acc (64) | SOP probe | NSP probe | SOP head | NSP head | paper: MLM / NSP / SOP |",
           "|---|---|---|---|---|---|---|"]
    for name, row in result["rows"].items():
        p = TABLE5.get(name)
        paper = f"{p['mlm']} / {p['nsp']} / {p['sop']}" if p else "-"
        out.append(f"| {name} | {cell(row, 'mlm_acc')} | {cell(row, 'sop')} | {cell(row, 'nsp')} | "
                   f"{cell(row, 'sop_head')} | {cell(row, 'nsp_head')} | {paper} |")
    out += ["", "| contrast | A - B per seed (points) | mean, t 95% over seeds | McNemar p per seed |",
            "|---|---|---|---|"]
    for c in result["contrasts"].values():
        d = c["difference"]
        per = ", ".join(f"{100 * v['difference']:+.1f}" for v in c["per_seed"].values())
        ci = f" [{100 * d['ci95'][0]:+.1f}, {100 * d['ci95'][1]:+.1f}]" if d["ci95"] else ""
        ps = ", ".join("-" if v["mcnemar_p"] is None else f"{v['mcnemar_p']:.2g}" for v in c["per_seed"].values())
        out.append(f"| {c['a']} vs {c['b']} on {c['task'].upper()} | {per} | {100 * d['mean']:+.1f}{ci} | {ps} |")
    return "\n".join(out)
