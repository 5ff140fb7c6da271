"""Table 5's clean version: the three rows trained from scratch on the whole classroom recipe, no shared trunk.

Each row (MLM + SOP, MLM + NSP, MLM only on SOP-layout pairs with the sentence loss off) runs the 5,000-step
recipe per seed and is scored as the trunk's branches are (trunk.score_point). That is 45,000 steps in all: about
11 hours on 2 CPU cores, about 10 minutes on one H100 as parallel worker processes. So it is opt-in, never part of
`all`; on a GPU machine, with a time cap:

    ALBERT_MINI_WORKERS=9 timeout 900 python -m albert_mini experiments sentence_scratch --device cuda

Finished rows are kept with the other runs, so a capped run continues where it stopped.
"""

from __future__ import annotations

import functools

from .sentence_task import CONTRASTS, PlannedRun, branch_row, contrast, plans, row_values
from .sentence_task import describe_budget as describe_budget  # meta.budget: the recipe's plans
from .trunk import ROWS, train_scratch, trunk_config


def scratch_spec(trunk, row: str, seed: int) -> dict:
    return {"kind": "scratch", "config": trunk_config().to_dict(), "row": row, "seed": seed,
            "plan": trunk.settings()}


def plan(budget, seeds) -> list[PlannedRun]:
    trunk = plans(budget)[0]
    short, long = trunk.setup().phases()
    tokens = {short.seq_len: short.tokens, long.seq_len: long.tokens}
    return [PlannedRun(f"{row} seed {seed}", scratch_spec(trunk, row, seed), tokens) for seed in seeds for row in ROWS]


def run(runner) -> dict:
    trunk = plans(runner.budget)[0]
    seeds = list(runner.seeds)
    jobs = [(scratch_spec(trunk, row, seed), functools.partial(train_scratch, row, seed, trunk),
             f"{row} seed {seed} from scratch") for seed in seeds for row in ROWS]
    found = runner.cached_all(jobs)
    records = {row: {} for row in ROWS}
    for (spec, _, _), record in zip(jobs, found):
        records[spec["row"]][spec["seed"]] = {**record, "after_short": record, "start_step": 0}
    return {"seeds": seeds, "rows": {row: branch_row(row, records[row], trunk) for row in ROWS},
            "contrasts": {name: contrast(records, a, b, on) for name, (a, b, on) in CONTRASTS.items()},
            "plan": trunk.settings(), "values": {row: [row_values(r) for r in records[row].values()]
                                                          for row in ROWS}}


def figure(result: dict):
    """Every row on SOP and NSP (primary probe, 64 tokens), one dot per seed."""
    from ...study.figure_style import book_figure, book_style

    fig, ax = book_figure(1, 1, height=3.8)
    with book_style():
        for offset, task, colour in ((-0.15, "sop", "tab:blue"), (0.15, "nsp", "tab:orange")):
            for i, row in enumerate(result["rows"].values()):
                values = [100 * v for v in row[task]["values"]]
                ax.scatter([i + offset] * len(values), values, color=colour, s=18,
                           label=task.upper() if i == 0 else None)
        ax.axhline(50, color="grey", ls=":", lw=1)
        ax.set(xticks=range(len(result["rows"])), xticklabels=list(result["rows"]),
               ylabel="probe accuracy %, 64 tokens", title="Rows from scratch, one dot per seed")
        ax.legend(loc="upper left", ncols=2)
        fig.tight_layout()
    return fig


def table(result: dict) -> str:
    out = ["### Sentence task from scratch (Table 5's clean version)", "",
           "| row | MLM acc (64) | SOP probe | NSP probe |", "|---|---|---|---|"]
    for name, row in result["rows"].items():
        cells = [f"{100 * row[k]['mean']:.1f}" for k in ("mlm_acc", "sop", "nsp")]
        out.append(f"| {name} | {' | '.join(cells)} |")
    return "\n".join(out)
