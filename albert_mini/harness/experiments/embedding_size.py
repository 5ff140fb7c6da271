"""Table 3 analog: a sweep of the embedding size E for the all-shared and the not-shared model.

Row mapping to the paper (ALBERT-base, H = 768): our E = 64 and E = 128 sit next to the paper's rows with the same
E; our E = H = 256 (no E -> H projection) next to the paper's E = H = 768. The paper's E = 256 row (E = H / 3) has
no counterpart at H = 256.
"""

from __future__ import annotations

from ...study.paper import table3_row
from .budget import Budget, variant
from .measure import Pretraining
from .tables import params_figure, params_table, variant_rows

TITLE = "Embedding size E (Table 3 analog)"
SIZES = (64, 128, 256)
SHARING = ("none", "all")


def label(strategy: str, E: int) -> str:
    return f"{strategy} E={E}"


def plan(budget: Budget, seeds) -> list[Pretraining]:
    return [Pretraining(label(s, E), variant(s, E), "sop", seed) for s in SHARING for E in SIZES for seed in seeds]


def run(runner) -> dict:
    records = runner.pretrain_all(plan(runner.budget, runner.seeds))
    # Each E is compared with E = 128 under the same sharing: the paper's choice for every ALBERT.
    keys = {label(s, E): {"E": E, "sharing": s, "baseline": label(s, 128)} for s in SHARING for E in SIZES}
    return variant_rows(records, keys, runner.budget)


def figure(result: dict):
    return params_figure(result, TITLE, table3_row)


def table(result: dict) -> str:
    return params_table(result, TITLE, table3_row)
