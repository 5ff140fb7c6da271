"""The committed experiment results as chapters read them: tables and the numbers their commentary quotes.

Everything comes from data/results/<name>.json (written by `make experiments`), so a chapter types no measured
number by hand. Files made before seeds were added (one value per cell) read as one seed with no spread.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..paths import DATA_ROOT
from .glance import Difference
from .paper import table3_row, table4_row
from .stats import seed_summary

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["contrast", "contrast_lines", "finetune_differences", "finetune_plan", "finetune_rows", "load", "setting",
           "smoothness_curves", "smoothness_reading", "speedup_table", "table5_decisions", "table5_glance",
           "table5_reading", "table5_strata", "table5_strata_lines", "variant_differences", "variant_markdown",
           "variant_table"]

RESULTS = DATA_ROOT / "results"
# The paper row beside each row of a Table 3 or Table 4 analog.
PAPER_ROWS = {"embedding_size": table3_row, "sharing": table4_row}


def load(name: str, folder: Path | None = None) -> dict:
    """data/results/<name>.json; a missing file is an error naming the command that makes it."""
    path = Path(folder or RESULTS) / f"{name}.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `make experiment-{name}` to produce it")
    return json.loads(path.read_text())


def cell(value) -> dict | None:
    """One table cell as a seed summary (mean, std, n, values), whatever format the file has."""
    if value is None:
        return None
    if isinstance(value, dict) and "mean" in value:
        return value
    if isinstance(value, dict) and "accuracy" in value:
        return seed_summary([value["accuracy"]])
    return seed_summary([value])


def fmt(summary: dict | None, scale: float = 100, digits: int = 1) -> str:
    """"mean ± std (n seeds)", or the mean alone for one seed."""
    if summary is None:
        return "-"
    text = f"{scale * summary['mean']:.{digits}f}"
    return text + (f" ± {scale * summary['std']:.{digits}f}" if summary.get("std") is not None else "")


def setting(result: dict) -> str:
    """How a result was made, in one line for a chapter: tokens per model, steps and seeds. The revision and the
    machine stay in the file's meta block and the results page (a chapter's output does not change with them)."""
    meta = result["meta"]
    budget = meta["budget"]
    return f"{budget['tokens']:,} training tokens per model ({budget['steps']} steps), {len(meta['seeds'])} seed(s)"


def variant_table(name: str, folder: Path | None = None) -> list[dict]:
    """Rows of the Table 3 (embedding_size) or Table 4 (sharing) analog, each with the paper row beside it."""
    result = load(name, folder)
    paper_row = PAPER_ROWS[name]
    rows = []
    for label, row in result["rows"].items():
        paper = paper_row(row)
        versus = row.get("vs_baseline") or {}
        sop_versus = versus.get("sop", {})
        rows.append({"model": label, "E": row["E"], "sharing": row["sharing"], "params": row["params"],
                     "mlm": cell(row["mlm_acc"]), "mlm_loss": cell(row.get("mlm_loss")), "sop": cell(row["sop"]),
                     "sop_constant_seeds": row.get("sop_constant_seeds", 0), "baseline": row.get("baseline"),
                     "per_seed": row.get("per_seed", {}),
                     "mlm_vs_baseline": versus.get("mlm_acc"), "mlm_loss_vs_baseline": versus.get("mlm_loss"),
                     "sop_vs_baseline": sop_versus.get("bootstrap"),
                     "sop_mcnemar_p": sop_versus.get("mcnemar_p"),
                     "paper_params": paper[0] if paper else None, "paper_avg": paper[1] if paper else None})
    return rows


def variant_markdown(rows: list[dict]) -> str:
    """A markdown table of variant_table rows: MLM loss first (the primary measure), SOP only where it varies."""
    out = ["| model | params | MLM loss | MLM acc (%) | SOP head | paper: params, Avg |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        paper = f"{r['paper_params']}M, {r['paper_avg']}" if r["paper_params"] else "-"
        n = r["sop"]["n"] if r["sop"] else 0
        sop = f"constant in {r['sop_constant_seeds']} of {n}" if r["sop_constant_seeds"] else fmt(r["sop"])
        out.append(f"| {r['model']} | {r['params'] / 1e6:.2f}M | {fmt(r['mlm_loss'], 1, 3)} | {fmt(r['mlm'])} | "
                   f"{sop} | {paper} |")
    return "\n".join(out)


def row_difference(rows: list[dict], a: str, b: str, key: str = "mlm_loss") -> dict:
    """Row `a` minus row `b` of a variant table, seed by seed (mean, t interval over seeds): a contrast between
    two rows that share no baseline, e.g. attention-only against FFN-only sharing."""
    by_name = {r["model"]: r for r in rows}
    seeds = sorted(by_name[a]["per_seed"])
    return seed_summary([by_name[a]["per_seed"][s][key] - by_name[b]["per_seed"][s][key] for s in seeds])


def variant_differences(rows: list[dict], key: str = "mlm_loss") -> list[Difference]:
    """Each variant row minus its baseline row, seed by seed, as Differences for `glance.seed_table`: the MLM loss
    (lower is better) or, with key "mlm", the MLM accuracy in points."""
    out = []
    for row in rows:
        versus = row.get(f"{key}_vs_baseline")
        if versus:
            out.append(_difference(row["model"], row["baseline"], versus["values"], key))
    return out


def contrast(rows: list[dict], a: str, b: str, key: str = "mlm_loss") -> Difference:
    """Row `a` minus row `b` of a variant table, seed by seed, as a Difference (see row_difference)."""
    return _difference(a, b, row_difference(rows, a, b, key)["values"], key)


def _difference(a: str, b: str, values: list[float], key: str) -> Difference:
    if key == "mlm_loss":
        return Difference(a, b, values, "MLM loss", "lower", 1.0, 3)
    return Difference(a, b, values, "MLM accuracy, points", "higher", 100.0, 1)


def finetune_differences(rows: list[dict], against: str = "random") -> list[Difference]:
    """Chapter 8's comparison as Differences: the pretrained encoder minus the random one (or, with against
    "baseline", minus the no-network baseline where it answered the same examples), per task, seed by seed."""
    out = []
    for row in rows:
        unit = "points" if row["scale"] == 100 else "EM"
        if against == "random":
            note = (f"random encoder gave one answer in {row['random_constant']} of {row['seeds']} seeds (not "
                    "tested by McNemar)" if row.get("random_constant") else None)
            out.append(Difference("pretrained", "random", row["per_seed"], f"{row['task']} {row['metric']}, {unit}",
                                  "higher", row["scale"], 1, note, row["task"]))
        elif row["vs_baseline_values"] is not None:
            out.append(Difference("pretrained", "baseline", row["vs_baseline_values"],
                                  f"{row['task']} {row['metric']}, {unit}", "higher", row["scale"], 1,
                                  label=row["task"]))
    return out


def table5_reading(section: dict) -> list[str]:
    """Each row of a Table 5 section (sentence_task.json, or its "exploratory" part) on each sentence task: the
    primary score (a linear probe on the pooled output, 64 tokens) seed by seed against chance (Wilson 95%
    intervals on every held-out pair); a probe that gave one answer to every pair is said to, not tested."""
    lines = []
    for trained, row in section["rows"].items():
        for task in ("nsp", "sop"):
            seeds = row["per_seed"]
            accuracies = ", ".join(f"{100 * seeds[s][task]:.1f}" for s in seeds)
            above = sum(seeds[s]["wilson"][task][0] > 0.5 for s in seeds)
            constant = sum(bool(seeds[s]["constant"].get(task)) for s in seeds)
            text = (f"{trained} row on {task.upper()} (probe): {accuracies}%; above chance in {above} "
                    f"of {len(seeds)} seed(s)")
            lines.append(text + (f"; one answer to every pair in {constant} seed(s)" if constant else ""))
    return lines


def table5_decisions(result: dict) -> list[str]:
    """The pre-registered go/no-go steps of sentence_task.json as they happened, each with its evidence."""
    lines = []
    for d in result["decisions"]:
        if d["step"] == "branch point":
            lines.append(f"Branch point: at step {d['checked_at']}, SOP head "
                         f"{100 * d['sop_head']:.1f}% [{100 * d['sop_head_wilson'][0]:.1f}, "
                         f"{100 * d['sop_head_wilson'][1]:.1f}], SOP probe {100 * d['sop_probe']:.1f}% "
                         f"[{100 * d['sop_probe_wilson'][0]:.1f}, {100 * d['sop_probe_wilson'][1]:.1f}]: "
                         f"{d['decision']}.")
        elif "threshold" in d:
            low, high = d["sop_wilson"]
            lines.append(f"{d['step'][0].upper() + d['step'][1:]}: SOP probe {100 * d['sop']:.1f}% "
                         f"[{100 * low:.1f}, {100 * high:.1f}] against a threshold of {100 * d['threshold']:.0f}%: "
                         f"{d['decision']}.")
        else:
            lines.append(f"{d['step']}: {d['decision']}.")
    return lines


def table5_glance(result: dict) -> str:
    """One markdown table of the models the pre-registered analysis trained: the trunk at its branch point, the
    seed-0 SOP branch(es) and, where run, the trunk continued on its own; held-out, 64 tokens, 95% Wilson."""
    def interval(score: float, bounds: list[float]) -> str:
        return f"{100 * score:.1f} [{100 * bounds[0]:.1f}, {100 * bounds[1]:.1f}]"

    trunk = result["trunk"]
    point = next(p for p in trunk["points"] if p["step"] == trunk["branch_point"])
    models = [(f"trunk at step {point['step']}", point, point["sop_head_wilson"], point["sop_wilson"])]
    pilot = result.get("pilot")
    if pilot:
        models.append((f"SOP branch, seed 0, to step {pilot['steps']}", pilot, None, None))
    if result.get("continued_trunk"):
        last = result["continued_trunk"]["points"][-1]
        models.append((f"trunk continued to step {last['step']}", last, last["sop_head_wilson"], last["sop_wilson"]))
    out = ["| model | MLM acc | SOP, own head | SOP, probe | NSP, probe |", "|---|---|---|---|---|"]
    for name, m, head_ci, probe_ci in models:
        head = interval(m["sop_head"], head_ci) if head_ci else f"{100 * m['sop_head']:.1f}"
        probe = interval(m["sop"], probe_ci) if probe_ci else f"{100 * m['sop']:.1f}"
        out.append(f"| {name} | {100 * m['mlm_acc']:.1f} | {head} | {probe} | {100 * m['nsp']:.1f} |")
    base = result.get("baselines")
    if base and all("no_network" in base[t] for t in ("sop", "nsp")):  # each task's own no-network readers
        sop, nsp = base["sop"]["no_network"]["64"], base["nsp"]["no_network"]["64"]
        for name, s, n in (("no network: majority label", sop["majority"], nsp["majority"]),
                           ("no network: surface features (SOP), topic features (NSP)", sop["surface_regression"],
                            nsp["topic_regression"])):
            s, n = 100 * s["all"]["accuracy"], 100 * n["all"]["accuracy"]
            out.append(f"| {name} | - | {s:.1f} | {s:.1f} | {n:.1f} |")
    elif base:  # older files, without each task's own readers: the better of the majority label and word-overlap stump
        best = {t: 100 * max(base[t]["majority"], base[t]["overlap_stump"]) for t in ("sop", "nsp")}
        out.append(f"| no network (majority or word overlap) | - | {best['sop']:.1f} | {best['sop']:.1f} | "
                   f"{best['nsp']:.1f} |")
    return "\n".join(out)


def _stratum(score: dict) -> str:
    low, high = score["wilson"]
    return f"{100 * score['accuracy']:.1f} [{100 * low:.1f}, {100 * high:.1f}]"


def table5_strata(result: dict, length: int = 64) -> str:
    """SOP of the pre-registered analysis's models on all held-out pairs and on the quote strata (pairs whose
    segments hold a double quotation mark, and pairs without one; albert_mini.study.sop_strata), each with its pair
    count and 95% Wilson interval: the primary probe and the own head of the trunk at its branch point, the seed-0
    SOP branch and the continued trunk; below them the no-network readers of the same pairs (sentence_task.json
    `baselines`: the majority training label, the quote-state rule, the surface-feature regression)."""
    tail = "" if length == 64 else f"_{length}"
    trunk = result["trunk"]
    models = [(f"trunk at step {trunk['branch_point']}",
               next(p for p in trunk["points"] if p["step"] == trunk["branch_point"]))]
    if result.get("pilot"):
        models.append((f"SOP branch, seed 0, to step {result['pilot']['steps']}", result["pilot"]))
    if result.get("continued_trunk"):
        last = result["continued_trunk"]["points"][-1]
        models.append((f"trunk continued to step {last['step']}", last))
    rows = [(name, scored_by, m["strata"][f"sop{key}{tail}"]) for name, m in models
            for scored_by, key in (("probe", ""), ("own head", "_head")) if f"sop{key}{tail}" in m["strata"]]
    base = result.get("baselines", {}).get("sop", {}).get("no_network", {}).get(str(length))
    if base:
        rule = base["quote_state_rule"]
        rows += [("no network: majority training label", "-", base["majority"]),
                 (f"no network: quote-state rule (answers {rule['decided']:,} pairs, {rule['right_when_decided']:,} "
                  "right)", "-", rule),
                 ("no network: surface-feature regression", "-", base["surface_regression"])]
    counts = rows[0][2]
    out = [f"| model ({length} tokens, held-out SOP) | scored by | all {counts['all']['pairs']:,} pairs | quote "
           f"({counts['quote']['pairs']:,}) | quote-free ({counts['no_quote']['pairs']:,}) |", "|---|---|---|---|---|"]
    out += [f"| {name} | {scored_by} | {_stratum(s['all'])} | {_stratum(s['quote'])} | {_stratum(s['no_quote'])} |"
            for name, scored_by, s in rows]
    return "\n".join(out)


def table5_strata_lines(section: dict, length: int = 64) -> list[str]:
    """Each row of a Table 5 section (its "exploratory" part, say) on SOP, seed by seed, on all held-out pairs and
    on the quote strata with their pair counts: the primary probe, and the row's own head where it trained one."""
    tail = "" if length == 64 else f"_{length}"
    lines = []
    for trained, row in section["rows"].items():
        seeds = row["per_seed"]
        for scored_by, key in (("probe", ""), ("own head", "_head")):
            if f"sop{key}{tail}" not in seeds[next(iter(seeds))]["strata"]:
                continue
            split = [seeds[s]["strata"][f"sop{key}{tail}"] for s in seeds]
            parts = []
            for stratum, label in (("all", "all pairs"), ("quote", "quote"), ("no_quote", "quote-free")):
                values = ", ".join(f"{100 * x[stratum]['accuracy']:.1f}" for x in split)
                parts.append(f"{label} {values}% of {split[0][stratum]['pairs']:,}")
            lines.append(f"{trained} row on SOP ({scored_by}), seeds {', '.join(seeds)}: " + "; ".join(parts))
    return lines


def contrast_lines(result: dict) -> list[str]:
    """The pre-registered contrasts of sentence_task.json: per seed, mean and t interval over seeds, verdict."""
    lines = []
    for c in result["contrasts"].values():
        d = c["difference"]
        per_seed = ", ".join(f"{100 * v['difference']:+.1f}" for v in c["per_seed"].values())
        interval = f" [{100 * d['ci95'][0]:+.1f}, {100 * d['ci95'][1]:+.1f}]" if d.get("ci95") else ""
        lines.append(f"+{c['a'].upper()} - +{c['b'].upper()} on {c['task'].upper()}: seeds {per_seed}; mean "
                     f"{100 * d['mean']:+.1f}{interval} ({verdict(d.get('ci95'), 'A ahead', 'B ahead')})")
    return lines


def smoothness_curves(folder: Path | None = None) -> dict[str, dict]:
    """Per model: trained and initial per-layer L2 and degrees (mean, std or None), from smoothness.json."""
    models = load("smoothness", folder)["models"]
    out: dict[str, dict] = {}
    for label, entry in models.items():
        if "trained" in entry:  # per-seed format
            out[label] = {state: {m: {"mean": entry[state][m]["mean"], "std": entry[state][m]["std"],
                                      "values": entry[state][m].get("values")}
                                  for m in ("l2", "degrees")} for state in ("trained", "init")}
        else:  # one seed: labels "<model>, trained" and "<model>, at initialisation"
            model, _, state = label.rpartition(", ")
            key = "trained" if state == "trained" else "init"
            out.setdefault(model, {})[key] = {m: {"mean": entry[m], "std": None} for m in ("l2", "degrees")}
    return out


def wobble(curve: list[float]) -> float:
    """How much a per-layer curve goes up and down: the total change from layer to layer minus the net change
    from the first layer to the last. Zero for a curve that only falls (or only rises), however steeply."""
    return sum(abs(b - a) for a, b in zip(curve, curve[1:])) - abs(curve[-1] - curve[0])


def smoothness_reading(curves: dict[str, dict]) -> dict[str, dict]:
    """Per model, the trained angle at the first and last layer and its largest rise from one layer to the next."""
    out = {}
    for label, states in curves.items():
        degrees = states["trained"]["degrees"]["mean"]
        rises = [b - a for a, b in zip(degrees, degrees[1:])]
        l2 = states["trained"]["l2"]["mean"]
        out[label] = {"first": degrees[0], "last": degrees[-1], "largest_rise": max(rises),
                      "falls_every_layer": all(r < 0 for r in rises),
                      "degrees_wobble": wobble(degrees), "l2_wobble": wobble(l2)}
        per_seed = states["trained"]["degrees"].get("values") or [degrees]
        out[label]["seeds"] = len(per_seed)
        out[label]["seeds_falling_every_layer"] = sum(all(b < a for a, b in zip(v, v[1:])) for v in per_seed)
    return out


def speedup_table(folder: Path | None = None) -> tuple[list[dict], dict]:
    """Table 2's Speedup column measured here: rows (model, tokens/s, speedup, FLOP ratio, paper) and the meta."""
    result = load("throughput", folder)
    rows = [{"model": name, **row} for name, row in result["rows"].items()]
    return rows, result["meta"]


def verdict(interval: list[float] | None, ahead: str, behind: str) -> str:
    """What a 95% interval of a difference says: `ahead` above 0, `behind` below 0, else no clear difference."""
    if interval is None:
        return "one seed: no interval"
    low, high = interval
    return ahead if low > 0 else behind if high < 0 else "no clear difference"


def finetune_plan(folder: Path | None = None) -> dict:
    """How chapter 8's comparison was run, as finetune.json records it: the seeds, and per task the fine-tuning
    settings both encoders shared (steps, batch size, learning rate, ...; the seed apart)."""
    result = load("finetune", folder)
    return {"seeds": result["meta"]["seeds"],
            "settings": {task: pair["pretrained"]["settings"] for task, pair in result["rows"].items()}}


def finetune_rows(folder: Path | None = None) -> list[dict]:
    """Chapter 8's table: per task the pretrained and random encoders' scores over seeds, the no-network baseline,
    and the differences (pretrained - random, pretrained - baseline) seed by seed with t intervals over seeds and
    verdicts (McNemar per seed for accuracy tasks, as support). Values are in the file's units: accuracies as
    fractions (`scale` 100 prints percent), exact match already in percent."""
    result = load("finetune", folder)
    rows = []
    for task, pair in result["rows"].items():
        p, r, baseline = pair["pretrained"], pair["random"], result["baselines"][task]
        if "accuracy" in p:
            versus, against = pair["pretrained_vs_random"], pair.get("pretrained_vs_baseline")
            row = {"task": task, "metric": "accuracy", "scale": 100, "pretrained": p["accuracy"],
                   "random": r["accuracy"], "baseline": baseline["accuracy"],
                   "difference": versus["accuracy"]["mean"], "interval": versus["accuracy"]["ci95"],
                   "per_seed": versus["accuracy"]["values"], "mcnemar_per_seed": versus.get("mcnemar_per_seed"),
                   "test": "t interval over seeds",
                   "vs_baseline": against["accuracy"]["mean"] if against else None,
                   "vs_baseline_interval": against["accuracy"]["ci95"] if against else None,
                   "vs_baseline_values": against["accuracy"]["values"] if against else None,
                   "chance": result["chance"].get(task)}
        else:
            em = pair["pretrained_vs_random"]["exact_match"]
            row = {"task": task, "metric": "exact match", "scale": 1, "pretrained": p["exact_match"],
                   "random": r["exact_match"], "baseline": baseline["exact_match"],  # percent, as SQuAD's script
                   "difference": em["mean"], "interval": em["ci95"], "per_seed": em["values"],
                   "mcnemar_per_seed": None, "test": "t interval over seeds", "vs_baseline": None,
                   "vs_baseline_interval": None, "vs_baseline_values": None, "chance": None}
        row["verdict"] = verdict(row["interval"], "pretrained ahead", "random ahead")
        row["baseline_verdict"] = (verdict(row["vs_baseline_interval"], "above the baseline", "below the baseline")
                                   if row["vs_baseline_interval"] is not None else "-")
        row["steps"], row["batch_size"] = p["settings"]["steps"], p["settings"]["batch_size"]
        row["epochs"], row["n"], row["seeds"] = p["epochs"], p["n"], len(p[row["metric"].replace(" ", "_")]["values"])
        # Seeds whose head gave one answer to every test example (None where the file cannot tell).
        row["pretrained_constant"], row["random_constant"] = p.get("constant_seeds"), r.get("constant_seeds")
        rows.append(row)
    return rows
