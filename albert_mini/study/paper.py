"""Numbers reported in the ALBERT paper (Lan et al., ICLR 2020), and the way its tables count parameters.

The numbers are data for tests, chapters and results pages. Parameter counts are in millions as printed. Scores
are dev-set numbers; SQuAD entries are (F1, EM).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..model.config import AlbertConfig, embedding_variant
from ..model.counting import closed_form_breakdown, parameter_table

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["KNOWN_DISAGREEMENTS", "TABLE1", "TABLE2_SPEEDUP", "TABLE3", "TABLE4", "TABLE5", "albert_base_variant",
           "paper_convention_count", "paper_parameter_table"]

# Table 1: the model configurations and their printed parameter counts (millions).
TABLE1 = {
    "bert-base": 108, "bert-large": 334, "bert-xlarge": 1270,
    "albert-base": 12, "albert-large": 18, "albert-xlarge": 60, "albert-xxlarge": 235,
}

# Table 2: training throughput relative to BERT-large, same hardware and iterations.
TABLE2_SPEEDUP = {
    "bert-base": 4.7, "bert-large": 1.0, "albert-base": 5.6, "albert-large": 1.7,
    "albert-xlarge": 0.6, "albert-xxlarge": 0.3,
}

# Table 3: ALBERT-base with embedding size E, not-shared vs all-shared. (sharing, E) -> params (M), Avg score.
TABLE3 = {
    ("none", 64): (87, 81.3), ("none", 128): (89, 81.7), ("none", 256): (93, 81.8), ("none", 768): (108, 82.3),
    ("all", 64): (10, 79.0), ("all", 128): (12, 80.1), ("all", 256): (16, 79.6), ("all", 768): (31, 79.8),
}

# Table 4: ALBERT-base sharing strategies at E = 768 and E = 128. (E, sharing) -> params (M), Avg score.
TABLE4 = {
    (768, "all"): (31, 79.8), (768, "attention"): (83, 81.6), (768, "ffn"): (57, 79.5), (768, "none"): (108, 82.3),
    (128, "all"): (12, 80.1), (128, "attention"): (64, 81.7), (128, "ffn"): (38, 80.2), (128, "none"): (89, 81.6),
}

# Table 5: sentence-prediction task (ALBERT-base). task -> intrinsic accuracies (MLM, NSP, SOP) and Avg score.
TABLE5 = {
    "none": {"mlm": 54.9, "nsp": 52.4, "sop": 53.3, "avg": 79.0},
    "nsp": {"mlm": 54.5, "nsp": 90.5, "sop": 52.0, "avg": 79.2},
    "sop": {"mlm": 54.0, "nsp": 78.9, "sop": 86.5, "avg": 80.1},
}

# Printed counts that no counting convention derives from the architecture (see paper_convention_count).
KNOWN_DISAGREEMENTS = {
    "albert-xlarge": "Table 1 prints 60M; the architecture gives 58.7M (59.0M with the pretraining heads).",
    "albert-xxlarge": "Table 1 prints 235M; the architecture gives 222.6M (223.2M with the pretraining heads).",
}


def albert_base_variant(embedding_size: int, sharing: str) -> AlbertConfig:
    """The ALBERT-base shape with a given E and sharing strategy, as in Tables 3 and 4."""
    return embedding_variant("albert-base", embedding_size, sharing)


def paper_convention_count(config: AlbertConfig) -> int:
    """Parameters counted the way the paper's tables appear to count them.

    Two rules reproduce the printed numbers: the E -> H projection exists only when E != H (as in the original
    TensorFlow code), and the pooler is counted for models with any sharing but not for unshared ones.
    """
    parts = closed_form_breakdown(config, pooler=config.sharing != "none")
    if config.embedding_size == config.hidden_size:
        parts["projection"] = 0
    return sum(parts.values())


def paper_parameter_table(configs: Mapping[str, AlbertConfig] | Iterable[str], pooler: bool = True,
                          heads: bool = False) -> list[dict]:
    """parameter_table rows, each with "paper_convention": the total as the paper's tables count it.

    The convention ignores `pooler` and `heads`, which choose only the closed-form columns.
    """
    if not isinstance(configs, (Mapping, str)):
        configs = list(configs)  # read twice below
    rows = parameter_table(configs, pooler=pooler, heads=heads)  # checks the argument
    named = configs if isinstance(configs, Mapping) else {name: AlbertConfig.from_preset(name) for name in configs}
    return [{**row, "paper_convention": paper_convention_count(named[row["name"]])} for row in rows]


# Our Tables 3-4 rows beside the paper's (ALBERT-base, H = 768): our E = 64 and E = 128 next to the paper's rows with
# the same E, our E = H = 256 (albert-mini's H, no E -> H projection) next to the paper's E = H = 768.
def paper_e(E: int) -> int:
    """The paper's E that our E stands next to: the same E, or E = H = 768 for albert-mini's E = H."""
    return 768 if E == AlbertConfig.from_preset("albert-mini").hidden_size else E


def table3_row(row: dict) -> tuple[int, float] | None:
    """The Table 3 (params, Avg) beside a row of our embedding_size result, by its sharing and E; None if none."""
    return TABLE3.get((row["sharing"], paper_e(row["E"])))


def table4_row(row: dict) -> tuple[int, float] | None:
    """The Table 4 (params, Avg) beside a row of our sharing result, by its E and sharing; None if none."""
    return TABLE4.get((paper_e(row["E"]), row["sharing"]))
