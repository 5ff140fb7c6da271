"""Table 3 analog: a sweep of the embedding size E for the all-shared and the not-shared model."""

from __future__ import annotations

from ..paper import TABLE3
from .common import Budget, params_figure, params_table, score_variant, variant

TITLE = "Embedding size E (Table 3 analog)"
# Our sweep (albert-mini, H = 256) next to the paper's (ALBERT-base, H = 768): the same fractions of H.
PAPER_E = {32: 64, 64: 128, 128: 256, 256: 768}


def run(budget: Budget) -> dict:
    return {"rows": {f"{strategy} E={E}": {"E": E, "sharing": strategy, **score_variant(variant(strategy, E), budget)}
                     for strategy in ("none", "all") for E in PAPER_E}}


def figure(result: dict):
    return params_figure(result, TITLE)


def table(result: dict) -> str:
    return params_table(result, TITLE, TABLE3, lambda row: (row["sharing"], PAPER_E[row["E"]]))
