"""Table 5 analog from one trunk: MLM only, then branches with no sentence task, NSP or SOP (see trunk.py).

Scored on the same examples for every model: MLM on the same masked held-out tokens; SOP and NSP on every validation
and test pair, by the model's own head where it trained one and by a linear probe on its frozen pooled output for
both tasks. The contrasts were named before the runs: the SOP branch against the NSP branch scored on SOP, the NSP
branch against none on SOP, the SOP branch against none on NSP. Seeds are the unit: each contrast is a difference
per seed with a t interval over seeds; McNemar's exact test per seed is supporting evidence.
"""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...settings import fast_mode
from ..paper import TABLE5
from ..stats import discordant, mcnemar_exact, seed_summary, wilson_interval
from .budget import FAST
from .measure import constant_head
from .runs import run_key
from .tables import plot_seed_cells
from .trunk import FAST_BRANCH, FAST_TRUNK, FULL_BRANCH, FULL_TRUNK, train_branch, train_trunk, trunk_config

TASKS = tuple(TABLE5)  # none, nsp, sop: one branch per row of the paper's table
TRUNK_SEED = 0
# The pre-registered contrasts: (model A, model B, the task both are scored on).
CONTRASTS = {"sop_vs_nsp_on_sop": ("sop", "nsp", "sop"), "nsp_vs_none_on_sop": ("nsp", "none", "sop"),
             "sop_vs_none_on_nsp": ("sop", "none", "nsp")}


def plans(budget=None):
    """The trunk and branch plans that go with a budget: the fast ones with the fast budget (tests), else full."""
    fast = fast_mode() if budget is None else budget == FAST
    return (FAST_TRUNK, FAST_BRANCH) if fast else (FULL_TRUNK, FULL_BRANCH)


def trunk_spec(trunk) -> dict:
    return {"kind": "trunk", "config": trunk_config().to_dict(), "task": "none", "seed": TRUNK_SEED,
            "plan": dataclasses.asdict(trunk)}


def branch_spec(trunk_key: str, task: str, seed: int, branch) -> dict:
    return {"kind": "branch", "trunk": trunk_key, "task": task, "seed": seed, "plan": dataclasses.asdict(branch)}


@dataclass(frozen=True)
class PlannedRun:
    """One run of this experiment as the estimate sees it: its spec and its training tokens per length."""

    label: str
    run_spec: dict
    tokens_by_length: dict

    def spec(self, *_) -> dict:
        return self.run_spec


def plan(budget, seeds) -> list[PlannedRun]:
    """The runs, for the estimate and the progress count: one trunk, then a branch per task and seed."""
    trunk, branch = plans(budget)
    spec = trunk_spec(trunk)
    runs = [PlannedRun("trunk", spec, {trunk.short.seq_len: trunk.short.tokens, trunk.long.seq_len: trunk.long.tokens})]
    return runs + [PlannedRun(f"branch {task} seed {seed}", branch_spec(run_key(spec), task, seed, branch),
                              {branch.phase.seq_len: branch.tokens}) for seed in seeds for task in TASKS]


def trunk_weights(runner, spec: dict) -> Path:
    folder = runner.cache.folder if runner.cache else Path(tempfile.mkdtemp(prefix="albert-mini-trunk-"))
    return folder / f"trunk-{run_key(spec)}.safetensors"


def run(runner) -> dict:
    trunk_plan, branch_plan = plans(runner.budget)
    spec = trunk_spec(trunk_plan)
    weights = trunk_weights(runner, spec)
    trunk = runner.cached(spec, lambda: train_trunk(trunk_plan, TRUNK_SEED, weights), "trunk (MLM only)",
                          complete=lambda r: weights.exists())
    key = run_key(spec)
    records: dict[str, dict[int, dict]] = {task: {} for task in TASKS}
    for seed in runner.seeds:  # seed by seed: the go/no-go reads seed 0's branches before the others run
        for task in TASKS:
            records[task][seed] = runner.cached(
                branch_spec(key, task, seed, branch_plan),
                lambda task=task, seed=seed: train_branch(weights, task, branch_plan, trunk_plan, seed),
                f"branch {task} seed {seed}")
    rows = {task: branch_row(task, records[task]) for task in TASKS}
    contrasts = {name: contrast(records, a, b, on) for name, (a, b, on) in CONTRASTS.items()}
    return {"trunk": trunk_summary(trunk), "rows": rows, "contrasts": contrasts,
            "plans": {"trunk": dataclasses.asdict(trunk_plan), "branch": dataclasses.asdict(branch_plan)},
            "scoring": "own head where the branch trained one, else a linear probe on the frozen pooled output "
                       "(fitted on training pairs); MLM on the same masked held-out tokens for every row",
            "paired_test": "per contrast: the difference per seed and a t interval over seeds (seeds are the unit); "
                           "McNemar's exact test per seed on the same held-out pairs as supporting evidence; no "
                           "test where a head gives one answer to every pair"}


def primary(record: dict, task: str) -> dict:
    """The score a row reports for `task`: its own head where it trained one, else the probe."""
    entry = record[task]
    return entry["head"] if "head" in entry else entry["probe"]


def branch_row(task: str, recs: dict[int, dict]) -> dict:
    per_seed = {}
    for seed, r in sorted(recs.items()):
        per_seed[str(seed)] = {"mlm_acc": r["mlm_128"]["acc"], "mlm_loss": r["mlm_128"]["loss"],
                               "mlm_acc_64": r["mlm_64"]["acc"],
                               "nsp": primary(r, "nsp")["accuracy"], "sop": primary(r, "sop")["accuracy"],
                               "nsp_probe": r["nsp"]["probe"]["accuracy"], "sop_probe": r["sop"]["probe"]["accuracy"],
                               "constant": {t: constant_head(primary(r, t)) for t in ("nsp", "sop")},
                               "wilson": {t: wilson(primary(r, t)) for t in ("nsp", "sop")}}
    keys = ("mlm_acc", "mlm_loss", "mlm_acc_64", "nsp", "sop", "nsp_probe", "sop_probe")
    first = recs[min(recs)]
    return {"per_seed": per_seed, **{k: seed_summary([per_seed[s][k] for s in per_seed]) for k in keys},
            "method": {t: "trained head" if t == task else "linear probe on the frozen pooled output"
                       for t in ("nsp", "sop")},
            "examples": {t: first[t]["examples"] for t in ("nsp", "sop")},
            "label_share": {t: first[t]["label_share"] for t in ("nsp", "sop")},
            "mlm_tokens": first["mlm_128"]["tokens"],
            "train_seconds": [recs[s]["train_seconds"] for s in sorted(recs)],
            "smoothness": {str(s): recs[s]["smoothness"] for s in sorted(recs)},
            "curve": first["curve"]}


def wilson(score: dict) -> list[float]:
    """The 95% Wilson interval of a score, from its per-pair correctness."""
    return list(wilson_interval(score["correct"].count("1"), len(score["correct"])))


def contrast(records, a: str, b: str, on: str) -> dict:
    """A minus B on task `on`, seed by seed: the t interval over seeds, and McNemar per seed where both vary."""
    seeds = sorted(set(records[a]) & set(records[b]))
    per_seed = {}
    for seed in seeds:
        sa, sb = primary(records[a][seed], on), primary(records[b][seed], on)
        only_a, only_b = discordant(sa["correct"], sb["correct"])
        tested = not (constant_head(sa) or constant_head(sb))
        per_seed[str(seed)] = {"difference": sa["accuracy"] - sb["accuracy"], "only_a": only_a, "only_b": only_b,
                               "mcnemar_p": mcnemar_exact(only_a, only_b) if tested else None,
                               "constant": {a: constant_head(sa), b: constant_head(sb)}}
    summary = seed_summary([v["difference"] for v in per_seed.values()])
    return {"a": a, "b": b, "task": on, "per_seed": per_seed, "difference": summary}


def trunk_summary(trunk: dict) -> dict:
    """The trunk's probe curve: MLM at both lengths and both probes at each probe point."""
    points = []
    for p in trunk["probes"]:
        points.append({"step": p["step"], "tokens": p["tokens"],
                       "mlm_acc_64": p["mlm_64"]["acc"], "mlm_acc_128": p["mlm_128"]["acc"],
                       "mlm_loss_128": p["mlm_128"]["loss"],
                       "mlm_acc_128_first_half": p["mlm_128"]["acc_first_half"],
                       "mlm_acc_128_second_half": p["mlm_128"]["acc_second_half"],
                       **{f"{t}_probe": p[t]["probe"]["accuracy"] for t in ("sop", "nsp")},
                       **{f"{t}_probe_wilson": wilson(p[t]["probe"]) for t in ("sop", "nsp")}})
    return {"points": points, "tokens": trunk["tokens"], "steps": trunk["steps"],
            "train_seconds": trunk["train_seconds"], "curve": trunk["curve"]}


def figure(result: dict):
    """Left: the trunk's probes along its training; middle and right: each branch on NSP and on SOP."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
    points = result["trunk"]["points"]
    tokens = [p["tokens"] / 1e6 for p in points]
    ax = axes[0]
    for key, name in (("sop_probe", "SOP probe"), ("nsp_probe", "NSP probe"), ("mlm_acc_128", "MLM acc at 128"),
                      ("mlm_acc_64", "MLM acc at 64")):
        ax.plot(tokens, [100 * p[key] for p in points], marker="o", label=name)
    ax.axhline(50, color="grey", ls="--", lw=1)
    ax.set(xlabel="trunk training tokens (millions)", ylabel="held-out accuracy (%)", title="The MLM-only trunk")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    rows = result["rows"]
    x = np.arange(len(rows))
    for ax, task in zip(axes[1:], ("nsp", "sop")):
        plot_seed_cells(ax, [rows[t][task] for t in rows])
        ax.scatter(x, [TABLE5[t][task] for t in rows], marker="D", color="tab:red", label="paper, Table 5")
        ax.axhline(50, color="grey", ls="--", lw=1, label="chance")
        ax.set(xticks=x, xticklabels=[f"+{t.upper()}\n({'head' if t == task else 'probe'})" for t in rows],
               ylabel=f"held-out {task.upper()} accuracy (%)",
               title=f"Scored on {task.upper()} ({rows[next(iter(rows))]['examples'][task]:,} pairs)")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    plans = result["plans"]
    fig.suptitle(f"Table 5 analog: one MLM trunk ({result['trunk']['tokens'] / 1e6:.1f}M tokens), branches of "
                 f"{branch_tokens(plans['branch']) / 1e6:.1f}M "
                 f"tokens, {len(result['meta']['seeds'])} seeds")
    fig.tight_layout()
    return fig


def branch_tokens(plan: dict) -> int:
    """Training tokens of a branch, from its plan as written in the result."""
    phase = plan["phase"]
    return phase["steps"] * phase["seq_len"] * phase["batch_size"]


def table(result: dict) -> str:
    def cell(row, key):
        s = row[key]
        return f"{100 * s['mean']:.1f}" + (f" ± {100 * s['std']:.1f}" if s["std"] is not None else "")

    out = ["### Sentence task (Table 5 analog, one trunk and its branches)", "",
           "| branch | MLM acc | MLM loss | NSP acc | SOP acc | paper: MLM / NSP / SOP |", "|---|---|---|---|---|---|"]
    for task, row in result["rows"].items():
        p = TABLE5[task]
        loss = row["mlm_loss"]
        out.append(f"| {task} | {cell(row, 'mlm_acc')} | {loss['mean']:.3f} | {cell(row, 'nsp')} | "
                   f"{cell(row, 'sop')} | {p['mlm']} / {p['nsp']} / {p['sop']} |")
    out += ["", "| contrast | A - B per seed (points) | mean, t 95% over seeds | McNemar p per seed |",
            "|---|---|---|---|"]
    for c in result["contrasts"].values():
        d = c["difference"]
        per = ", ".join(f"{100 * v['difference']:+.1f}" for v in c["per_seed"].values())
        ci = f" [{100 * d['ci95'][0]:+.1f}, {100 * d['ci95'][1]:+.1f}]" if d["ci95"] else ""
        ps = ", ".join("-" if v["mcnemar_p"] is None else f"{v['mcnemar_p']:.2g}" for v in c["per_seed"].values())
        out.append(f"| {c['a']} vs {c['b']} on {c['task'].upper()} | {per} | {100 * d['mean']:+.1f}{ci} | {ps} |")
    return "\n".join(out)
