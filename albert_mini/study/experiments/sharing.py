"""Table 4 analog: the four sharing strategies (all, attention, FFN, none) at E = 128 and at E = H."""

from __future__ import annotations

from ..paper import TABLE4
from .common import Budget, mini, params_figure, params_table, score_variant, variant

TITLE = "Sharing strategies (Table 4 analog)"


def run(budget: Budget) -> dict:
    return {"rows": {f"E={E} {strategy}": {"E": E, "sharing": strategy, **score_variant(variant(strategy, E), budget)}
                     for E in (128, mini().hidden_size) for strategy in ("all", "attention", "ffn", "none")}}


def figure(result: dict):
    return params_figure(result, TITLE)


def table(result: dict) -> str:
    # Our E = H = 256 rows stand next to the paper's E = H = 768 rows.
    return params_table(result, TITLE, TABLE4, lambda row: (row["E"] if row["E"] != mini().hidden_size else 768,
                                                            row["sharing"]))
