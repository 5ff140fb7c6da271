"""Table 4 analog: the four sharing strategies (all, attention, FFN, none) at E = 128, the ALBERT setting."""

from __future__ import annotations

from ...study.paper import table4_row
from .budget import Budget, variant
from .measure import Pretraining
from .tables import params_figure, params_table, variant_rows

TITLE = "Sharing strategies (Table 4 analog)"
STRATEGIES = ("all", "attention", "ffn", "none")
# E = 128 only: the E = H rows cost as much as the rest together and the paper's question is what sharing costs
# an ALBERT; embedding_size.py has E = H = 256 with all and none.
SIZES = (128,)


def label(E: int, strategy: str) -> str:
    return f"E={E} {strategy}"


def plan(budget: Budget, seeds) -> list[Pretraining]:
    return [Pretraining(label(E, s), variant(s, E), "sop", seed) for E in SIZES for s in STRATEGIES for seed in seeds]


def run(runner) -> dict:
    records = runner.pretrain_all(plan(runner.budget, runner.seeds))
    # Every strategy is compared with all-shared at the same E: the paper's question is what sharing costs.
    keys = {label(E, s): {"E": E, "sharing": s, "baseline": label(E, "all")}
            for E in SIZES for s in STRATEGIES}
    return variant_rows(records, keys, runner.budget)


def figure(result: dict):
    return params_figure(result, TITLE, table4_row)


def table(result: dict) -> str:
    return params_table(result, TITLE, table4_row)
