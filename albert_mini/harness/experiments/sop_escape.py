"""Stage B of the SOP plateau study (Table 5 v4), pre-registered after Stage A and before its new runs (PLAN below).

Stage A's lever screen ended with no lever passing (sop_levers.json), so by its own plan Stage B keeps one row: SOP
branches on the classroom optimizer, unchanged, whose escape count over seeds bounds how often fresh heads from one
trunk state leave chance. Without a GPU
the row runs as Table 5 v3's SOP branches from the committed step-3,000 trunk: seeds 0-2 are v3's exploratory SOP
row (finished, read from the run cache), seeds 3 and 4 are new runs of exactly that branch (the same run keys'
shape, so they are read back by v3's code too). The figure: SOP against steps for every seed, with the quote strata,
each stratum's no-network baselines as bands on its own panel, and the row's escape rate.

Opt-in (never part of `all`): `albert-mini experiments sop_escape` trains the missing seeds. A branch keeps
checkpoints under the git-ignored cache/ while it trains, so the same command continues a killed run at its last
checkpoint; finished runs are kept with the other runs in data/results/experiment-runs/.
"""

from __future__ import annotations

import dataclasses
import functools

from ...study.figure_style import book_figure, book_style
from ...study.stats import wilson_interval
from .budget import FAST
from .runs import run_key
from .sentence_task import PlannedRun, branch_row, branch_spec, entry, planned_trunk, plans, trunk_start
from .sentence_task import describe_budget as describe_budget  # meta.budget: the recipe's plans
from .sop_levers import partial_folder
from .strata import baselines, strata_values
from .trunk import train_branch

ESCAPE_SOP = 0.60  # a seed escapes when its primary SOP reaches this ...
ESCAPE_MARGIN = 0.03  # ... and beats the surface-feature regression by this much (the study's margin rule)
SKILL_SOP = 0.55  # the reported second reading: the quote-free stratum at or above this
PLAN_SEEDS = (0, 1, 2, 3, 4)  # Stage B's; on the full plan the command refuses other --seeds (commands/experiments.py)

PLAN = {
    "question": "from the classroom recipe's trunk at step 3,000, in how many of 5 SOP branches (each a fresh head "
                "on its own data stream, the trunk's optimizer and schedule continued) does SOP leave chance "
                "(clearly above what the pairs' surface gives away) within the branch's 1,500 steps?",
    "why_this_row": "Stage A (sop_levers, plan 6c1262e) ended with no lever passing: A1 failed at seed 0 (51.2%), A2 "
                    "reached 60.5 / 52.5 / 56.0% and its gain was the quote cue. The study's rule for that outcome: "
                    "Stage B keeps only the control row, and its escape rate over 5 seeds is the finding",
    "row": "Table 5 v3's SOP branch, unchanged: the committed v3 trunk (the classroom recipe, albert-mini, MLM + "
           "SOP, LAMB 5e-3, 125 warm-up steps, a 5,000-step schedule, 64 x 64-token batches, seed 0) at step 3,000 "
           "with its whole checkpoint; 1,250 steps of 64 x 64 tokens then 250 of 32 x 128 (steps 3,001-4,500); a "
           "fresh SOP head drawn from the seed, the trunk's pooler; seed s reads data seed 1000 + s; MLM + SOP, "
           "weight 1 each; then the v3 downstream fine-tuning (austen-mc, polarity)",
    "seeds": "0-4. Seeds 0, 1, 2 are v3's exploratory SOP row, finished on a GPU before this plan (primary SOP 50.7 "
             "/ 52.5 / 53.9%: none of them escapes by the rule below, known when this was written). Seeds 3 and 4 "
             "are new and run on whatever device is lent (CPU here): the trunk's CPU and GPU runs show that "
             "rounding alone changes a trajectory, so the device is recorded with each run, as part of what a seed is",
    "primary_score": "as v3 and Stage A: a frozen linear probe on the pooled [CLS] output, fitted on the 4,096 "
                     "probe-training pairs, scored on the 1,540 held-out SOP pairs at 64 tokens, unmasked, at the "
                     "end of the branch, with the quote (884) and quote-free (656) strata",
    "escape": f"a seed escapes if its primary SOP is at least {ESCAPE_SOP:.0%} and at least "
              f"{100 * ESCAPE_MARGIN:.0f} points above the surface-feature regression on the same pairs (57.0%; "
              "the study's margin rule applied to one seed). The escape rate is escapes / seeds with a 95% Wilson "
              "interval",
    "skill": f"reported beside it: the seeds whose quote-free stratum reaches {SKILL_SOP:.0%}, "
             "the order learned without the quote cue",
    "reading": "what the count measures: fresh SOP heads, each on its own data stream, branched from one trunk "
               "state (step 3,000) and trained 1,500 steps. 0 of 5: none of these branches left chance by the "
               "rule within 1,500 steps; 1 or more: branches from this state escape at that rate. Either way it "
               "is the rate from one trunk state, not the from-scratch rate of the recipe (5 x 5,000 steps, left "
               "for a GPU), and it does not say why the classroom run, which left chance from a state of its own, "
               "escaped",
    "not_in_this_stage": "no NSP or none rows, no paired contrasts (no lever passed, so the study's full table is not "
                         "run); no seeds "
                         "beyond 4 (the extra-seed rule reads an SOP-NSP interval this stage does not have)",
}


def seeds(budget, asked) -> list[int]:
    """Stage B's seeds: 0-4 on the full plan (the plan fixes them: the command refuses other --seeds); the asked
    ones on the fast plan (tests)."""
    return list(asked) if budget == FAST else list(PLAN_SEEDS)


def plan(budget, asked) -> list[PlannedRun]:
    """The runs, for the estimate and the progress count: the trunk (a finished v3 run) and a branch per seed."""
    trunk, point, tokens = planned_trunk(budget)
    key, branch = run_key(trunk.run_spec), plans(budget)[1]
    return [trunk, *[PlannedRun(f"sop seed {seed}", branch_spec(key, point, "sop", seed, branch, budget), tokens)
                     for seed in seeds(budget, asked)]]


def run(runner) -> dict:
    start = trunk_start(runner)
    trunk_plan, branch_plan, trunk, point = start.plan, start.branch, start.record, start.point
    chosen = seeds(runner.budget, runner.seeds)
    jobs = []
    for seed in chosen:
        s = branch_spec(start.key, point, "sop", seed, branch_plan, runner.budget)
        where = partial_folder(runner.cache, s) if runner.cache is not None else None
        jobs.append((s, functools.partial(train_branch, start.checkpoint, "sop", seed, trunk_plan, branch_plan,
                                          runner.budget, None, where), f"sop seed {seed}"))
    start.ensure_checkpoint(runner, [s for s, _, _ in jobs])
    records = dict(zip(chosen, runner.cached_all(jobs)))
    base = baselines("sop", trunk_plan, 64)
    surface = base["surface_regression"]["all"]["accuracy"]
    row = branch_row("sop", records, trunk_plan)
    plans_used = {"trunk": trunk_plan.settings(), "branch": dataclasses.asdict(branch_plan)}
    return {"plan": PLAN, "seeds": chosen, "plans": plans_used,
            "row": {**row, "curves": {str(s): r["curve"] for s, r in sorted(records.items())},
                    "after_short_step": records[chosen[0]]["after_short"]["step"],
                    "after_short_strata": {str(s): strata_values(r["after_short"], trunk_plan)
                                           for s, r in sorted(records.items())}},
            "trunk_points": trunk_points(trunk, trunk_plan, point),
            "trunk_curve": sentence_curve(trunk["curve"], point),
            "continued_trunk": continued(runner, trunk_plan, point),
            "baselines": {"sop": base}, "escape": escape_rate(row["per_seed"], surface)}


def trunk_points(trunk: dict, plan, point: int) -> list[dict]:
    """The trunk's primary SOP (with strata) at each of its scoring points up to the branch point."""
    return [{"step": p["step"], "sop": entry(p, "sop")["accuracy"], **strata_values(p, plan)}
            for p in trunk["probes"] if p["step"] <= point]


def sentence_curve(points: list[dict], until: int | None = None) -> list[dict]:
    """(step, the sentence head's accuracy on its training batches) from a training curve, up to `until`."""
    return [{"step": p["step"], "sentence_acc": p["sentence_acc"]} for p in points
            if p.get("sentence_acc") is not None and (until is None or p["step"] <= until)]


def continued(runner, plan, point: int) -> dict | None:
    """Context, not part of the row: v3's diagnostic, the trunk continued on its own stream and head to step 4,500
    (on a GPU), read from the run cache where it is (never trained here)."""
    from .sentence_task import continued_trunk

    record = continued_trunk(runner.cache) if runner.cache is not None and runner.budget != FAST else None
    if record is None:
        return None
    return {"curve": [p for p in sentence_curve(record["curve"]) if p["step"] > point],
            "points": [{"step": p["step"], "sop": entry(p, "sop")["accuracy"], **strata_values(p, plan)}
                       for p in record["probes"] if p["step"] > point]}


def escape_rate(per_seed: dict[str, dict], surface: float) -> dict:
    """Each seed read by the escape rule and the skill reading, and the escape rate over the seeds."""
    checks = {s: {"sop": v["sop"], "escapes": v["sop"] >= ESCAPE_SOP and v["sop"] - surface >= ESCAPE_MARGIN,
                  "sop_no_quote": v.get("sop_no_quote"),
                  "quote_free_at_least_55": v.get("sop_no_quote", 0.0) >= SKILL_SOP}
              for s, v in per_seed.items()}
    escapes, skill, n = (sum(c["escapes"] for c in checks.values()),
                         sum(c["quote_free_at_least_55"] for c in checks.values()), len(checks))
    return {"per_seed": checks, "surface": surface, "escapes": escapes, "seeds": n,
            "rate": escapes / n if n else None, "rate_wilson": list(wilson_interval(escapes, n)) if n else None,
            "quote_free_escapes": skill}


# ---------------------------------------------------------------------------------------------- figure and table
def figure(result: dict):
    """Top left: the SOP head's accuracy on its training batches against steps, the trunk's up to the branch point
    and each seed's branch after it. The other three panels: the primary SOP probe at the scoring points on all
    pairs, on the quote pairs and on the quote-free pairs, each behind that stratum's own no-network baselines
    (bands: their 95% intervals); the escape line on all pairs, where the rule reads it; the title gives the escape
    rate."""
    fig, axes = book_figure(2, 2, height=7.4, sharex=True)
    (left, every), (quote, free) = axes
    row, escape, context = result["row"], result["escape"], result.get("continued_trunk")
    base = result["baselines"]["sop"]
    with book_style():
        trunk = result["trunk_curve"]
        left.plot([p["step"] for p in trunk], [100 * p["sentence_acc"] for p in trunk], color="black", lw=0.8,
                  label="trunk")
        if context:
            left.plot([p["step"] for p in context["curve"]], [100 * p["sentence_acc"] for p in context["curve"]],
                      color="grey", lw=0.8, ls="--", label="continued")
        for seed, points in row["curves"].items():
            points = sentence_curve(points)
            left.plot([p["step"] for p in points], [100 * p["sentence_acc"] for p in points], lw=0.7,
                      color="tab:blue", alpha=0.7, label="branches" if seed == min(row["curves"]) else None)
        left.axhline(50, color="grey", ls=":", lw=1)
        low_y, high_y = left.get_ylim()
        left.set_ylim(min(low_y, 50 - 2 * (high_y - 50)), high_y)  # room below the curves for the legend
        left.legend(loc="lower center", ncols=2, handlelength=1.2, columnspacing=0.8)
        left.set(title="head on its training batches")
        floors = (("majority", "majority label", "tab:grey"), ("quote_state_rule", "quote-state rule", "tab:purple"),
                  ("surface_regression", "surface regression", "tab:red"))
        panels = ((every, "sop", "all", "all pairs"), (quote, "sop_quote", "quote", "quote pairs"),
                  (free, "sop_no_quote", "no_quote", "quote-free pairs"))
        lows, highs = [], []
        for ax, key, stratum, name in panels:
            for floor, label, colour in floors:
                value = base[floor][stratum]
                ax.axhspan(100 * value["wilson"][0], 100 * value["wilson"][1], color=colour, alpha=0.15,
                           label=f"{label} (no network)" if ax is every else None)
            points = result["trunk_points"] + (context["points"] if context else [])
            ax.plot([p["step"] for p in points], [100 * p[key] for p in points], color="black", lw=1, ls="--",
                    marker="s", ms=3, label="trunk, then continued" if ax is every else None)
            for seed, values in row["per_seed"].items():
                short = row["after_short_strata"][seed]
                ys = [100 * (values["sop_after_short"] if key == "sop" else short[key]), 100 * values[key]]
                ax.plot([row["after_short_step"], row["steps"]], ys, color="tab:blue", marker="o", ms=3, lw=0.8,
                        label="SOP branches, a line per seed" if ax is every and seed == min(row["per_seed"])
                        else None)
            ax.axhline(50, color="grey", ls=":", lw=1)
            ax.set(title=f"{name} ({base[floor][stratum]['pairs']})", ylabel="SOP probe %, 64 tokens")
            lows.append(ax.get_ylim()[0])
            highs.append(ax.get_ylim()[1])
        every.axhline(100 * ESCAPE_SOP, color="black", ls="-.", lw=1, label=f"escape line {ESCAPE_SOP:.0%}")
        for ax, *_ in panels:  # one scale for the three strata, the escape line always in view
            ax.set_ylim(min(*lows, 45), max(*highs, 100 * ESCAPE_SOP + 3))
        for ax in (quote, free):
            ax.set(xlabel="step")
        left.set(ylabel="SOP head %")
        low, high = escape["rate_wilson"] or (0, 0)
        fig.suptitle(f"SOP branches from one trunk state: {escape['escapes']} of {escape['seeds']} escape "
                     f"(95% CI {100 * low:.0f}-{100 * high:.0f}%)")
        fig.legend(*every.get_legend_handles_labels(), loc="lower center", ncols=2)
        fig.tight_layout(rect=(0, 0.15, 1, 1))
    return fig


def table(result: dict) -> str:
    escape = result["escape"]
    out = ["### Stage B: SOP's escape rate, fresh heads from one trunk state", "",
           "| seed | SOP probe (64) | quote | quote-free | SOP head | MLM acc | escapes |",
           "|---|---|---|---|---|---|---|"]
    for seed, v in result["row"]["per_seed"].items():
        out.append(f"| {seed} | {100 * v['sop']:.1f} | {100 * v['sop_quote']:.1f} | {100 * v['sop_no_quote']:.1f} | "
                   f"{100 * v['sop_head']:.1f} | {100 * v['mlm_acc']:.1f} | "
                   f"{'yes' if escape['per_seed'][seed]['escapes'] else 'no'} |")
    low, high = escape["rate_wilson"] or (0, 0)
    out += ["", f"- escape rate: {escape['escapes']} of {escape['seeds']} seeds (95% Wilson {100 * low:.0f}-"
                f"{100 * high:.0f}%); quote-free stratum at 55% or more: {escape['quote_free_escapes']} of "
                f"{escape['seeds']}"]
    return "\n".join(out)
