"""Stage A of the SOP plateau study: a lever screen, pre-registered before any of its runs (PLAN below).

Table 5 v3 stopped at its go/no-go rule: from the classroom recipe's step-3,000 trunk, SOP stayed at chance. Its
exploratory SOP row (the first plan: 1,250 + 250 steps, seeds 0-2) is this screen's control. Two levers change only
the sentence path of that branch (levers.py): A1 takes the pooler and the sentence head out of LAMB's trust ratio
and weight decay; A2 trains the fresh head on NSP for 500 steps, then on SOP. Each lever runs on the same trunk
checkpoint, data and head draws as the control, and is scored as Table 5 v3's rows are, with the quote strata.

Opt-in (never part of `all`): `albert-mini experiments sop_levers --seeds 0` runs the seed-0 branches the stop rule
reads; `albert-mini experiments sop_levers` runs what the rules call for. A branch keeps checkpoints under the
git-ignored cache/ while it trains, so the same command continues a killed run at its last checkpoint; finished
runs are kept with the other runs in data/results/experiment-runs/.
"""

from __future__ import annotations

import dataclasses
import functools

from ...paths import CACHE_ROOT, DATA_ROOT
from ...study.figure_style import book_figure, book_style
from ...study.stats import wilson_interval
from .budget import FAST
from .levers import A1, A2, Lever
from .runs import run_key
from .sentence_task import (
    PlannedRun,
    branch_row,
    branch_spec,
    entry,
    planned_trunk,
    plans,
    trunk_start,
)
from .sentence_task import describe_budget as describe_budget  # meta.budget: the recipe's plans
from .strata import baselines
from .trunk import train_branch

PASS_SOP = 0.60  # the primary SOP a lever must reach in every seed
PASS_MARGIN = 0.03  # ... and by how much it must beat the surface-feature regression in every seed
STOP_SOP = 0.55  # the stop rule: if neither lever's seed 0 reaches this, two more levers are screened
SURFACE_QUOTED = 0.566  # the surface regression as an earlier script of the study measured it (for the record)
PASS_SEEDS = (0, 1, 2)  # the seeds a lever must pass in

PLAN = {
    "question": "does a change to the sentence path's optimizer (A1) or to its first task (A2) let SOP leave chance on "
                "Table 5 v3's branch recipe, clearly above what the pairs' surface gives away?",
    "trunk": "the committed Table 5 v3 trunk: the classroom recipe (albert-mini, MLM + SOP, LAMB 5e-3, 125 warm-up "
             "steps, a 5,000-step schedule, 64 x 64-token batches, seed 0) at step 3,000 with its whole checkpoint "
             "(weights, LAMB moments, step), the branch point v3 chose by its rule",
    "branches": "v3's first branch plan: the trunk's optimizer state and schedule continued for 1,250 steps of 64 x 64 "
                "tokens, then 250 steps of 32 x 128 (steps 3,001-4,500 of the 5,000-step schedule); a fresh "
                "sentence classifier drawn from the seed; the trunk's pooler; seed s reads data seed 1000 + s, the "
                "batches of v3's rows; MLM + sentence loss, weight 1 each",
    "levers": {
        "A1": "SOP, with the pooler and the sentence head (weights and biases) in a parameter group of their own "
              "without LAMB's trust ratio and without weight decay: each of their tensors moves by the schedule's "
              "learning rate times m / (sqrt(v) + eps), the Adam step LAMB gives LayerNorm and bias tensors (the "
              "reference's moments, no bias correction); their moments carry over from the trunk (the fresh head's "
              "start from zero); every other tensor as in v3",
        "A2": "the fresh head trained on NSP for the first 500 steps (the v3 NSP row's batches of the same seed), "
              "then SOP on the same head, nothing reset, for the remaining 750 steps of 64 tokens and 250 of 128 "
              "(the v3 SOP row's batches from its step 501 on); NSP's 'B continues A' and SOP's 'in order' share "
              "label 0",
    },
    "control": "v3's exploratory SOP row (the same trunk, plan, data and head draws, no lever; primary SOP 50.7 / "
               "52.5 / 53.9% for seeds 0 / 1 / 2): its finished runs are read, not run again",
    "seeds": "0, 1, 2; seed 0 of both levers runs first (the stop rule reads it)",
    "primary_score": "as v3: a frozen linear probe on the pooled [CLS] output, fitted on the 4,096 probe-training "
                     "pairs (300 full-batch Adam steps), scored on every validation and test SOP pair (1,540) at 64 "
                     "tokens, unmasked, at the end of the branch; beside it the same at 128 tokens, on masked pairs, "
                     "a probe on the mean of the last layer, the branch's own head, MLM on the same masked held-out "
                     "tokens, and the primary score after the 64-token phase",
    "strata": "every SOP score also on the quote pairs (either segment holds a double quotation mark: 884 at 64 "
              "tokens) and the quote-free pairs (656), with pair counts and 95% Wilson intervals "
              "(albert_mini.study.sop_strata); beside them, on the same pairs, the no-network baselines: the "
              "majority training label, the quote-state rule, the surface-feature regression",
    "surface_baseline": "the surface-feature regression as the code computes it on the held-out pairs at 64 tokens "
                        "(strata.baselines: 57.0%, 878 of 1,540, measured before any lever ran; an earlier "
                        "script of the study gave 56.6%). With either value the 60% floor is the binding threshold",
    "pass": f"a lever passes if its primary SOP is at least {PASS_SOP:.0%} in each of seeds 0, 1 and 2 and at least "
            f"{100 * PASS_MARGIN:.0f} points above the surface baseline in each",
    "stop_rule": f"seed 0 of A1 and of A2 runs first. If neither reaches {STOP_SOP:.0%} (primary SOP), the evidence "
                 "is recorded (the training curve, the head, the strata) and two more levers are screened the same "
                 "way before concluding, each pre-registered here before it runs: A3, StructBERT's 3-way sentence "
                 "objective (next, previous, other document); A4, a sentence head drawn at a larger scale with its "
                 f"own constant learning rate. Otherwise seeds 1 and 2 run for every lever whose seed 0 reached "
                 f"{STOP_SOP:.0%}; a lever below {PASS_SOP:.0%} at seed 0 has failed the pass rule already, and its "
                 "other seeds are descriptive",
    "not_in_the_screen": "no downstream fine-tuning (Stage B runs it for every row); no paired contrasts: the screen "
                         "reads each lever against fixed thresholds, with the control row shown beside it",
    "after": "no lever passes: Stage B keeps only the control row (its escape count over 5 seeds "
             "is the finding); a lever passes: Stage B applies it identically to every sentence row (the study's full "
             "table), pre-registered after this screen",
}


def levers(budget) -> tuple[Lever, ...]:
    """The screened levers; on the fast plan (tests, 2 short steps) A2 switches after 1 step instead of 500."""
    return (A1, dataclasses.replace(A2, nsp_first=1)) if budget == FAST else (A1, A2)


def lever_spec(trunk_key: str, point: int, seed: int, branch, lever: Lever) -> dict:
    """A lever run's cache key: a v3 SOP branch's settings plus the lever (no downstream fine-tuning)."""
    return {"kind": "branch", "trunk": trunk_key, "branch_point": point, "row": "sop", "seed": seed,
            "plan": dataclasses.asdict(branch), "lever": lever.settings()}


def partial_folder(cache, spec: dict):
    """Where a lever run keeps its checkpoints until it ends: under the git-ignored cache/ for the committed run
    cache (a half-trained run is never committed), inside the run cache's own folder otherwise (tests)."""
    committed = cache.folder.resolve() == (DATA_ROOT / "results" / "experiment-runs").resolve()
    base = CACHE_ROOT / "experiment-runs-partial" if committed else cache.folder / "partial"
    return base / f"branch-{run_key(spec)}"


# ---------------------------------------------------------------------------------------------- the rules
def primary(record: dict) -> float:
    return entry(record, "sop")["accuracy"]


def seeds_to_run(first: dict[str, dict], budget) -> list[str]:
    """The levers whose seeds 1 and 2 run, from their seed-0 records (the stop rule): every lever whose seed 0
    reached STOP_SOP; none if neither did. The fast plan (tests) always goes on, so a test reaches every step."""
    if budget == FAST:
        return list(first)
    return [name for name, record in first.items() if primary(record) >= STOP_SOP]


def stop_decision(first: dict[str, dict], budget) -> dict:
    going = seeds_to_run(first, budget)
    evidence = {name: {"sop": primary(r), "sop_wilson": list(wilson_interval(entry(r, "sop")["correct"].count("1"),
                                                                              len(entry(r, "sop")["correct"])))}
                for name, r in first.items()}
    if going:
        decision = f"seeds 1 and 2 of {', '.join(going)}"
    else:
        decision = "stop: neither lever's seed 0 reached 55%; screen A3 and A4 (to be pre-registered) next"
    return {"step": "seed 0 of every lever", "rule": PLAN["stop_rule"], "threshold": STOP_SOP, "seed_0": evidence,
            "decision": decision, "going_on": going}


def verdict(per_seed: dict[str, dict], surface: float, seeds=PASS_SEEDS) -> dict:
    """The pass rule on a lever's seeds: each seed's primary SOP against the 60% floor and the surface margin;
    "passes" only once every seed of `seeds` is in and each clears both."""
    checks = {s: {"sop": v["sop"], "at_least_60": v["sop"] >= PASS_SOP,
                  "margin_over_surface": v["sop"] - surface, "margin_ok": v["sop"] - surface >= PASS_MARGIN}
              for s, v in per_seed.items()}
    complete = all(str(s) in checks for s in seeds)
    passed = complete and all(c["at_least_60"] and c["margin_ok"] for c in checks.values())
    failed = any(not (c["at_least_60"] and c["margin_ok"]) for c in checks.values())
    return {"per_seed": checks, "passes": passed,
            "reading": "passes" if passed else "fails" if failed else "undecided (seeds missing)"}


# ---------------------------------------------------------------------------------------------- runs
def plan(budget, seeds) -> list[PlannedRun]:
    """The runs for the estimate and the progress count: the trunk (a finished v3 run; the control's branches are
    only read), seed 0 of every lever, then the other seeds the stop rule lets run, all of them while seed 0 is not
    finished (an upper bound)."""
    from .runs import RunCache, cache_dir

    trunk_run, point, tokens = planned_trunk(budget)
    trunk_key, branch, cache = run_key(trunk_run.run_spec), plans(budget)[1], RunCache(cache_dir())
    first = {lever.name: cache.load(lever_spec(trunk_key, point, seeds[0], branch, lever)) for lever in levers(budget)}
    later = (seeds_to_run(first, budget) if all(first.values()) else list(first))
    runs = [PlannedRun(f"{lever.name} seed {seed}", lever_spec(trunk_key, point, seed, branch, lever), tokens)
            for seed in seeds for lever in levers(budget) if seed == seeds[0] or lever.name in later]
    return [trunk_run, *runs]


def run(runner) -> dict:
    start = trunk_start(runner)
    trunk_plan, branch_plan, point, trunk_key = start.plan, start.branch, start.point, start.key
    seeds = list(runner.seeds)

    def job(lever, seed):
        s = lever_spec(trunk_key, point, seed, branch_plan, lever)
        where = partial_folder(runner.cache, s) if runner.cache is not None else None
        train = functools.partial(train_branch, start.checkpoint, "sop", seed, trunk_plan, branch_plan,
                                  runner.budget, lever, where)
        return s, train, f"{lever.name} seed {seed}"

    # Every run the plan may train, seed by seed; the stop rule picks which of seeds 1 on are trained.
    every = {(lever.name, seed): job(lever, seed) for seed in seeds for lever in levers(runner.budget)}
    start.ensure_checkpoint(runner, [s for s, _, _ in every.values()])
    names = [lever.name for lever in levers(runner.budget)]
    first = dict(zip(names, runner.cached_all([every[name, seeds[0]] for name in names])))
    decision = stop_decision(first, runner.budget)
    records = {name: {seeds[0]: record} for name, record in first.items()}
    later = [every[name, seed] for seed in seeds[1:] for name in names if name in decision["going_on"]]
    for (s, _, _), record in zip(later, runner.cached_all(later)):
        records[s["lever"]["name"]][s["seed"]] = record
    control = control_records(runner, trunk_key, point, branch_plan, seeds)
    base = baselines("sop", trunk_plan, 64)
    surface = base["surface_regression"]["all"]["accuracy"]
    rows = {name: lever_row(recs, trunk_plan) for name, recs in records.items()}
    return {"plan": PLAN, "seeds": seeds, "decisions": [decision],
            "plans": {"trunk": trunk_plan.settings(), "branch": dataclasses.asdict(branch_plan),
                      "levers": {lever.name: lever.settings() for lever in levers(runner.budget)}},
            "rows": rows, "control": branch_row("sop", control, trunk_plan) if control else None,
            "baselines": {"sop": base, "surface_earlier_script": SURFACE_QUOTED},
            "verdicts": {name: verdict(row["per_seed"], surface, seeds if runner.budget == FAST else PASS_SEEDS)
                         for name, row in rows.items()}}


def control_records(runner, trunk_key: str, point: int, branch_plan, seeds) -> dict[int, dict]:
    """v3's exploratory SOP branches of these seeds, read from the run cache (never trained here)."""
    if runner.cache is None:
        return {}
    found = {seed: runner.cache.load(branch_spec(trunk_key, point, "sop", seed, branch_plan, runner.budget))
             for seed in seeds}
    return {seed: record for seed, record in found.items() if record is not None}


def lever_row(recs: dict[int, dict], plan) -> dict:
    """A lever's scores per seed and over seeds, as v3's rows (with the quote strata), every seed's curve, and the
    step each run resumed at (None: it ran in one go)."""
    row = branch_row("sop", recs, plan)
    return {**row, "curve": {str(s): r["curve"] for s, r in sorted(recs.items())},
            "resumed_at": {str(s): r.get("resumed_at") for s, r in sorted(recs.items())}}


# ---------------------------------------------------------------------------------------------- figure and table
def figure(result: dict):
    """Primary SOP (64 tokens) per row and seed, on all pairs and on each quote stratum, with the thresholds."""
    fig, ax = book_figure(1, 1, height=4.2)
    rows = {"control (v3 SOP)": (result.get("control") or {}).get("per_seed", {}),
            **{name: row["per_seed"] for name, row in result["rows"].items()}}
    with book_style():
        for offset, key, label, colour in ((-0.2, "sop", "all pairs", "tab:blue"),
                                           (0.0, "sop_quote", "quote pairs", "tab:orange"),
                                           (0.2, "sop_no_quote", "quote-free pairs", "tab:green")):
            for i, per_seed in enumerate(rows.values()):
                values = [100 * v[key] for v in per_seed.values() if key in v]
                ax.scatter([i + offset] * len(values), values, color=colour, s=18, label=label if i == 0 else None)
        surface = 100 * result["baselines"]["sop"]["surface_regression"]["all"]["accuracy"]
        ax.axhline(50, color="grey", ls=":", lw=1)
        ax.axhline(surface, color="tab:red", ls="--", lw=1, label=f"surface regression {surface:.1f}%")
        ax.axhline(100 * PASS_SOP, color="black", ls="-.", lw=1, label=f"pass: {PASS_SOP:.0%} in every seed")
        ax.set(xticks=range(len(rows)), xticklabels=list(rows), ylabel="SOP probe %, 64 tokens",
               title="Stage A: levers against the plateau, one dot per seed")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncols=2)
        fig.tight_layout()
    return fig


def table(result: dict) -> str:
    def cell(v, key):
        return f"{100 * v[key]:.1f}" if key in v else "-"

    out = ["### Stage A: levers against SOP's plateau", "",
           "| row | seed | SOP probe (64) | quote | quote-free | SOP head | MLM acc | pass |",
           "|---|---|---|---|---|---|---|---|"]
    verdicts = result.get("verdicts", {})
    rows = {**({"control": result["control"]} if result.get("control") else {}), **result["rows"]}
    for name, row in rows.items():
        for seed, v in row["per_seed"].items():
            check = verdicts.get(name, {}).get("per_seed", {}).get(seed)
            mark = "-" if check is None else "yes" if check["at_least_60"] and check["margin_ok"] else "no"
            out.append(f"| {name} | {seed} | {cell(v, 'sop')} | {cell(v, 'sop_quote')} | {cell(v, 'sop_no_quote')} | "
                       f"{cell(v, 'sop_head')} | {cell(v, 'mlm_acc')} | {mark} |")
    out += ["", *[f"- {d['step']}: {d['decision']}" for d in result.get("decisions", [])],
            *[f"- {name}: {v['reading']}" for name, v in verdicts.items()]]
    return "\n".join(out)
