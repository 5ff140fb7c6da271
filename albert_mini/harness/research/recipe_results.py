"""data/results/recipe_search.json, its table and figure, from the raw probe and control records of the search.

The records are what `albert-mini recipe-search probe|control` writes (one JSON per run);
the committed ones are in data/results/recipe_search/. Probes that repeat another probe's recipe exactly are
kept as repeats: their numbers show whether a rerun reproduces.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from ...safe_files import atomic_write_text
from ..experiments.provenance import git_revision
from .recipe_space import Recipe

# The harness these records were made with, before the package moved to the layered layout.
OLD_HARNESS = {"e7768e0": "albert_mini/recipe_search.py of commit 088c9f9 (branch recipe-search, the old flat "
                          "package layout), run from its working tree on top of e7768e0 before it was committed",
               "088c9f9": "albert_mini/recipe_search.py of commit 088c9f9 (branch recipe-search, the old flat "
                          "package layout), on top of e7768e0"}
NOT_SETTINGS = ("seed",)


def load_records(folder: Path) -> tuple[list[dict], list[dict]]:
    """(probe records, control records) of a folder, each sorted by name."""
    probes, controls = [], []
    for path in sorted(Path(folder).glob("*.json")):
        record = json.loads(path.read_text())
        (controls if "log" in record else probes).append(record)
    return probes, controls


def changed_settings(recipe: dict) -> dict:
    """The recipe fields that differ from the shipped recipe (Recipe's defaults); {} for the baseline itself."""
    defaults = Recipe.of().record()
    out = {}
    for key, value in recipe.items():
        default = defaults.get(key)
        if isinstance(default, tuple):
            default = list(default)
        if key not in NOT_SETTINGS and value != default:
            out[key] = value
    return out


def revision(record: dict) -> dict:
    harness = OLD_HARNESS.get(record["git_revision"], "albert_mini/harness/research/recipe_search.py")
    return {"commit": record["git_revision"], "harness": harness}


def probe_summary(record: dict) -> dict:
    """One probe: settings, budget, machine, revision, final held-out numbers and the curve."""
    recipe = record["recipe"]
    final = record["curve"][-1]
    by_len = {n: m["mlm_acc"] for n, m in final.get("held_out_by_len", {}).items()}
    by_len.setdefault(str(recipe["seq_len"]), record["held_out_mlm"])
    diag = final.get("diag")
    curve = [{"step": p["step"], "tokens": p["step"] * recipe["batch_size"] * recipe["seq_len"],
              "seconds": round(p["seconds"], 1), "held_out_mlm": p["held_out"]["mlm_acc"],
              "held_out_sop": p["held_out"]["sentence_acc"], "held_out_sop_loss": p["held_out"]["sentence_loss"],
              "train_sample_mlm": p["train_sample"]["mlm_acc"], "train_mlm": p["train"]["mlm_acc"],
              "held_out_mlm_by_len": {n: m["mlm_acc"] for n, m in p.get("held_out_by_len", {}).items()},
              "min_attention_entropy": min(p["diag"]["entropy"]) if "diag" in p else None}
             for p in record["curve"]]
    return {"name": record["name"], "settings": changed_settings(recipe), "recipe": recipe,
            "steps": record["steps"], "tokens": record["steps"] * recipe["batch_size"] * recipe["seq_len"],
            "tokens_seen": record["train_history"][-1]["tokens_seen"], "wall_seconds": round(record["seconds"], 1),
            "threads": record["threads"], "machine": record["cpu"], "revision": revision(record),
            "held_out_pairs": record["held_out_pairs"], "held_out_mlm": record["held_out_mlm"],
            "held_out_mlm_by_len": by_len, "held_out_sop": record["held_out_sop"],
            "held_out_sop_loss": record["held_out_sop_loss"], "train_sample_mlm": final["train_sample"]["mlm_acc"],
            "attention_entropy": diag["entropy"] if diag else None,
            "position_cosine": diag["position_cosine"] if diag else None, "curve": curve}


def mark_repeats(probes: list[dict]) -> None:
    """Give a probe whose full recipe equals an earlier one's `repeat_of`; the later one (with diagnostics) leads."""
    defaults = Recipe.of().record()
    def key(p):
        full = {**{k: (list(v) if isinstance(v, tuple) else v) for k, v in defaults.items()}, **p["recipe"]}
        return json.dumps(full, sort_keys=True)
    groups: dict[str, list[dict]] = {}
    for p in probes:
        groups.setdefault(key(p), []).append(p)
    for group in groups.values():
        lead = max(group, key=lambda p: (p["attention_entropy"] is not None, p["name"]))
        for p in group:
            if p is not lead:
                p["repeat_of"] = lead["name"]


def first_step(log: list[dict], test) -> int | None:
    return next((row["step"] for row in log if test(row)), None)


def control_summary(record: dict, window: int = 25) -> dict:
    """One control: settings, when training accuracy first hit 100%, whether and when it collapsed, the curve."""
    log = record["log"]
    acc = [row["acc"] for row in log]
    rolling = [sum(acc[max(0, i - window + 1):i + 1]) / len(acc[max(0, i - window + 1):i + 1]) for i in range(len(acc))]
    perfect = first_step(log, lambda row: row["acc"] == 1.0)
    peak = max(range(len(rolling)), key=lambda i: rolling[i]) if rolling else 0
    # Collapsed: after reaching >= 90% over a window, the windowed accuracy falls to chance (< 60%).
    collapse = None
    if rolling and rolling[peak] >= 0.9:
        collapse = next((log[i]["step"] for i in range(peak, len(log)) if rolling[i] < 0.6), None)
    recovered = collapse is not None and any(r >= 0.9 for r in rolling[[row["step"] for row in log].index(collapse):])
    checks = [{"step": row["step"], "held_out_acc": row["held_out_acc"], "held_out_loss": row["held_out_loss"],
               "fit_acc": row.get("fit_acc"), "position_cosine": row["diag"]["position_cosine"][-1],
               "qk_logit_std": row["diag"]["qk_logit_std"], "min_attention_entropy": min(row["diag"]["entropy"]),
               "pooler_saturated": row["diag"]["pooler_saturated"]} for row in log if "diag" in row]
    return {"name": record["name"], "rule": record["rule"], "train_pairs": record["train_pairs"],
            "settings": {k: record["recipe"][k] for k in ("optimizer", "lr", "betas", "warmup", "decay", "clip_norm",
                                                          "seq_len", "batch_size")},
            "steps": record["steps"], "wall_seconds": round(record["seconds"], 1), "threads": record["threads"],
            "machine": record["cpu"], "revision": revision(record), "first_perfect_batch_step": perfect,
            "collapse_step": collapse, "recovered": recovered, "final_train_loss": log[-1]["loss"],
            "final_held_out_acc": checks[-1]["held_out_acc"] if checks else None,
            "train_loss": [round(row["loss"], 4) for row in log], "train_acc": acc, "checks": checks}


def build_results(folder: Path, uniform_entropy: dict | None = None, command: str | None = None) -> dict:
    """Everything data/results/recipe_search.json holds, from a folder of raw records (`command`: the command line
    that builds it, recorded with the git revision)."""
    raw_probes, raw_controls = load_records(folder)
    if not raw_probes and not raw_controls:
        raise ValueError(f"{folder} holds no probe or control records (*.json written by the recipe search)")
    probes = [probe_summary(r) for r in raw_probes]
    mark_repeats(probes)
    return {"about": "Pretraining-recipe probes at one token budget (seed 0, the same held-out chapters) and "
                     "sentence-loss-only controls; raw records in data/results/recipe_search/",
            "command": command, "git_revision": git_revision(),
            "held_out": {"masking": "15% n-grams, static, seed 1", "split": "validation",
                         "uniform_attention_entropy": uniform_entropy},
            "probes": probes, "controls": [control_summary(r) for r in raw_controls]}


def leaders(results: dict, top: int = 5) -> list[dict]:
    """The `top` probes by held-out MLM on the 128-token set (else the probe's own set), plus the baseline."""
    probes = [p for p in results["probes"] if "repeat_of" not in p]
    def score(p):
        return p["held_out_mlm_by_len"].get("128", p["held_out_mlm"])
    ranked = sorted(probes, key=score, reverse=True)
    chosen = ranked[:top]
    chosen += [p for p in probes if not p["settings"] and p not in chosen]
    return chosen


def pct(x) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def describe(settings: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in settings.items()) or "shipped recipe (LAMB 5e-3, seq 128, mask 15%)"


def table(results: dict, top: int = 5) -> str:
    """A markdown table of the leaders and the baseline."""
    rows = ["| probe | change from the shipped recipe | held-out MLM, 128-token set | 64-token set "
            "| held-out SOP (own length) | tokens | wall s |",
            "|---|---|---|---|---|---|---|"]
    for p in leaders(results, top):
        m = p["held_out_mlm_by_len"]
        rows.append(f"| {p['name']} | {describe(p['settings'])} | {pct(m.get('128'))} | {pct(m.get('64'))} | "
                    f"{pct(p['held_out_sop'])} | {p['tokens']:,} | {p['wall_seconds']:.0f} |")
    return "\n".join(rows)


def figure(results: dict):
    """Held-out MLM accuracy against training tokens, one line per probe (repeats left out), each on its own
    sequence length (a dashed line: a 64-token probe on the 128-token set); the legend below the axes, so the
    book's column shows it at a readable size."""
    from ...study.figure_style import book_figure, book_style

    probes = [p for p in results["probes"] if "repeat_of" not in p]
    fig, ax = book_figure(height=4.2 + 0.25 * (len(probes) + 1))
    with book_style():
        for p in probes:
            x = [c["tokens"] / 1e6 for c in p["curve"]]
            own = p["recipe"]["seq_len"]
            line, = ax.plot(x, [100 * c["held_out_mlm"] for c in p["curve"]], marker="o", ms=3,
                            label=p["name"] if own == 128 else f"{p['name']}, {own} tokens")
            other = [c["held_out_mlm_by_len"].get("128") for c in p["curve"]]
            if own != 128 and all(v is not None for v in other):
                ax.plot(x, [100 * v for v in other], ls="--", color=line.get_color(),
                        label=f"{p['name']}, 128 tokens")
        ax.set_xlabel("training tokens (millions)")
        ax.set_ylabel("held-out MLM accuracy (%)")
        machine = results["probes"][0]["machine"] if results["probes"] else ""
        ax.set_title(f"Recipe probes, albert-mini, seed 0 ({' '.join(machine.split(' ')[:2])} CPU)\n"
                     "held out on 128-token text unless named" if machine else "Recipe probes")
        ax.grid(alpha=0.3)
        fig.legend(loc="lower center", ncol=2, bbox_to_anchor=(0.5, 0.0))
        rows = math.ceil(len(ax.get_legend_handles_labels()[1]) / 2)
        fig.tight_layout(rect=(0, (0.25 * rows + 0.1) / fig.get_figheight(), 1, 1))
    return fig


def write_results(folder: Path, out: Path, figure_out: Path, command: str, with_entropy: bool = True) -> Path:
    """Build the results from `folder` (`command`: the command line doing it), write them to `out` and the figure
    to `figure_out`."""
    entropy = None
    if with_entropy:
        from ...study.collapse import uniform_entropy
        from .recipe_space import held_out

        entropy = {str(n): round(uniform_entropy(held_out(Recipe.of(), seq_len=n)), 4) for n in (64, 128)}
    results = build_results(folder, entropy, command)
    atomic_write_text(out, json.dumps(results, indent=1) + "\n")
    fig = figure(results)
    figure_out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(figure_out, dpi=120)
    return out

