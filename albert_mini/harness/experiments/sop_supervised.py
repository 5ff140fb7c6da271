"""Austen's learnability asymmetry: one encoder taught SOP labels or NSP labels alone, at equal budgets.

Pre-registered (PLAN) before any of its seeds ran. From the committed step-3,000 trunk of the classroom recipe
(the encoder Table 5's branches start from), each arm fine-tunes the whole encoder with a fresh sentence head on one
task's labels and nothing else (no MLM), with the book's fine-tuning optimizer, for the same number of steps on the
same number of pairs. Each arm's head is then read on both tasks' held-out pairs, with the quote strata and the
no-network floors beside every score. Opt-in: `albert-mini experiments sop_supervised` (about an hour of one CPU
core for its six runs); finished runs are kept with the other runs in data/results/experiment-runs/.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from dataclasses import dataclass

import numpy as np
import torch

from ...model.albert import AlbertForPreTraining
from ...study.figure_style import book_figure, book_style
from ...study.probes import pair_features
from ...study.sop_strata import quote_strata, stratified
from ...tasks.scoring import bits
from ...training.checkpoint import load_checkpoint
from ...training.optim import WarmupPolyDecay, build_optimizer, clip_grad_global_norm
from .budget import FAST
from .data import pair_set
from .provenance import experiment_device
from .sentence_task import PlannedRun, planned_trunk, trunk_start
from .sentence_task import describe_budget as describe_budget  # meta.budget: the recipe's plans
from .strata import baselines, texts
from .trunk import TrunkPlan, fresh_sentence_classifier, scored_pairs, trunk_config

ARMS = ("sop", "nsp")  # the labels an arm is taught
TASKS = ("sop", "nsp")  # what each arm's head is read on
PLAN_SEEDS = (0, 1, 2)
SEQ_LEN = 64
DATA_SEED = 3000  # arm seed s reads passes of training pairs drawn from (3000 + s) * 100 + k


@dataclass(frozen=True)
class Supervision:
    """How long and how an arm is taught: the book's fine-tuning optimizer (AdamW, 10% warm-up, linear decay)."""

    steps: int = 600
    batch_size: int = 32
    lr: float = 3e-4
    weight_decay: float = 0.01
    warmup_fraction: float = 0.1
    clip_norm: float = 1.0
    score_at: tuple[int, ...] = (150, 300, 600)


FULL, FAST_SUPERVISION = Supervision(), Supervision(steps=4, batch_size=4, score_at=(2, 4))

LEAVES_CHANCE_LOW = 0.50  # U1: the lower end of the 95% Wilson interval above this
QUOTE_FREE_CEILING = 0.55  # U2, U4: below this on the quote-free stratum
NO_ORDER_BAND = (0.45, 0.55)  # U3: inside this band

PLAN = {
    "question": "at equal budgets, from one encoder, is NSP learnable from its labels alone where SOP is not "
                "(the paper's argument that NSP is the easier task because topic gives it away)?",
    "encoder": "the committed trunk of the classroom recipe (albert-mini, MLM + SOP, LAMB 5e-3, seed 0) at step "
               "3,000, weights only: its SOP probe was at chance there (50.1%)",
    "arms": "sop: the encoder and a fresh sentence head taught SOP labels; nsp: the same with NSP labels. No MLM, "
            "the pooler kept, the head drawn from the seed; AdamW lr 3e-4, weight decay 0.01, 10% linear warm-up "
            "then linear decay, gradients clipped at 1.0; 600 steps of 32 pairs of at most 64 tokens (19,200 "
            "pairs from the training chapters: one pass of the instance builder gives about 7,200, so seed s "
            "reads passes k = 0, 1, 2 built from seed (3000 + s) * 100 + k, each shuffled by that seed)",
    "seeds": "0, 1, 2 for each arm, each run once. A pilot of one seed (SOP arm cut at step 400 by load: 47.4%; "
             "NSP arm 57.8% at step 600) was seen before this plan; it set nothing here but the step count",
    "scores": "each arm's own head, read on the held-out SOP pairs (1,540 at 64 tokens, the pairs every Table 5 "
              "row is scored on) and the 1,333 held-out NSP pairs, at steps 150, 300 and 600, on all pairs and on the "
              "quote and quote-free strata, with the no-network floors (majority, quote-state rule, surface "
              "regression for SOP; topic regression for NSP) on the same pairs. The SOP head reads an NSP pair "
              "as 'in order' = 'B continues A', and the NSP head reads an SOP pair the same way",
    "predictions": {
        "U1": "the NSP arm leaves chance on NSP: its head's 95% Wilson interval lies above 50% at step 600 in "
              "every seed",
        "U2": "the SOP arm does not learn order without the quotation cue: its head is below 55% on the "
              "quote-free SOP pairs at step 600 in every seed",
        "U3": "the NSP arm learns no order: its head reads SOP pairs at 45-55% at step 600 in every seed",
        "U4": "what the SOP arm transfers to NSP rides on the quotation cue: its head is below 55% on the "
              "quote-free NSP pairs at step 600 in every seed",
    },
    "reading": "U1 and U2 together: at this scale and budget the asymmetry is one of learnability, NSP's labels "
               "are learnable through topic and SOP's are not (beyond the quote cue). U1 failing: the budget is "
               "too small to show even NSP's shortcut; U2 failing: SOP is learnable from its labels here, and the "
               "plateau of the pretraining runs is the recipe's, not the task's",
}


def seeds(budget, asked) -> list[int]:
    """The plan's seeds on the full plan; the asked ones on the fast plan (tests)."""
    return list(asked) if budget == FAST else list(PLAN_SEEDS)


def supervision(budget) -> Supervision:
    return FAST_SUPERVISION if budget == FAST else FULL


def arm_spec(trunk_key: str, point: int, arm: str, seed: int, settings: Supervision) -> dict:
    return {"kind": "supervised", "trunk": trunk_key, "branch_point": point, "arm": arm, "seed": seed,
            "seq_len": SEQ_LEN, "pass_seeds": f"({DATA_SEED + seed}) * 100 + k",
            "settings": dataclasses.asdict(settings)}


def plan(budget, asked) -> list[PlannedRun]:
    """The trunk (a finished run) and an arm per seed, for the estimate and the progress count."""
    trunk, point, _ = planned_trunk(budget)
    from .runs import run_key

    key, settings = run_key(trunk.run_spec), supervision(budget)
    tokens = {SEQ_LEN: settings.steps * settings.batch_size * SEQ_LEN}
    return [trunk, *[PlannedRun(f"{arm} arm seed {seed}", arm_spec(key, point, arm, seed, settings), tokens)
                     for seed in seeds(budget, asked) for arm in ARMS]]


# ---------------------------------------------------------------------------------------------- one arm
def head_scores(model: AlbertForPreTraining, plan: TrunkPlan) -> dict:
    """The model's sentence head on the held-out pairs of each task: accuracy, per-pair correctness, answers."""
    out = {}
    for task in TASKS:
        inputs, labels, _ = scored_pairs(task, "held_out", SEQ_LEN, False, plan)
        predicted = pair_features(model, inputs)["logits"].argmax(-1)
        correct = predicted == labels
        out[task] = {"accuracy": float(correct.float().mean()), "correct": bits(correct),
                     "answers": sorted(set(predicted.tolist()))}
    return out


def training_pairs(task: str, seed: int, needed: int, max_documents: int | None) -> tuple[dict, torch.Tensor]:
    """`needed` training pairs of `task` in the order an arm reads them: pass k of the book's instance builder
    over the training chapters is drawn from seed (DATA_SEED + seed) * 100 + k and shuffled by the same seed, and
    passes follow one another until there are enough (one pass at 64 tokens gives about 7,200 pairs)."""
    from ...text.padding import pad_batch

    chosen, k = [], 0
    while len(chosen) < needed:
        pass_seed = (DATA_SEED + seed) * 100 + k
        _, _, instances = pair_set(task, ("train",), SEQ_LEN, None, pass_seed, max_documents)
        if not instances:
            raise ValueError(f"the training chapters give no {task.upper()} pair at {SEQ_LEN} tokens")
        order = np.random.default_rng(pass_seed).permutation(len(instances))
        chosen += [instances[i] for i in order]
        k += 1
    chosen = chosen[:needed]
    inputs = pad_batch({"input_ids": [x.tokens for x in chosen], "token_type_ids": [x.token_type_ids for x in chosen]})
    return inputs, torch.tensor([x.label for x in chosen])


def train_arm(checkpoint, arm: str, seed: int, plan: TrunkPlan, settings: Supervision) -> dict:
    """One arm: the trunk's weights, a fresh head from `seed`, `settings.steps` steps of `arm`'s labels alone."""
    model = AlbertForPreTraining(trunk_config())
    load_checkpoint(checkpoint, model)
    model.predictions.requires_grad_(False)  # no MLM: the output head is not part of either arm
    device = experiment_device()
    model.to(device)
    inputs, labels = training_pairs(arm, seed, settings.steps * settings.batch_size, plan.max_documents)
    optimizer = build_optimizer(model, "adamw", lr=settings.lr, weight_decay=settings.weight_decay)
    fresh_sentence_classifier(model, optimizer, seed)  # the head drawn from the seed, as Table 5's branches draw it
    schedule = WarmupPolyDecay(settings.lr, settings.steps, round(settings.warmup_fraction * settings.steps))
    torch.manual_seed(seed)
    points, losses, start = [], [], time.perf_counter()
    for step in range(settings.steps):
        model.train()
        rows = slice(step * settings.batch_size, (step + 1) * settings.batch_size)
        batch = {k: v[rows].to(device) for k, v in inputs.items()}
        schedule.apply(optimizer, step)
        out = model(**batch, sentence_order_label=labels[rows].to(device))
        out.loss.backward()
        clip_grad_global_norm([p for p in model.parameters() if p.grad is not None], settings.clip_norm)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(float(out.loss.detach()))
        if step + 1 in settings.score_at:
            points.append({"step": step + 1, **head_scores(model, plan)})
    return {"arm": arm, "seed": seed, "steps": settings.steps, "train_seconds": time.perf_counter() - start,
            "losses": losses, "points": points}


# ---------------------------------------------------------------------------------------------- the experiment
def run(runner) -> dict:
    start = trunk_start(runner)
    trunk_plan, settings = start.plan, supervision(runner.budget)
    chosen = seeds(runner.budget, runner.seeds)
    jobs = [(arm_spec(start.key, start.point, arm, seed, settings),
             functools.partial(train_arm, start.checkpoint, arm, seed, trunk_plan, settings),
             f"{arm} arm seed {seed}") for seed in chosen for arm in ARMS]
    start.ensure_checkpoint(runner, [s for s, _, _ in jobs])
    records = runner.cached_all(jobs)
    strata = {task: quote_strata(texts(task, "held_out", SEQ_LEN, trunk_plan)) for task in TASKS}
    arms: dict[str, dict] = {arm: {} for arm in ARMS}
    for record in records:
        arms[record["arm"]][str(record["seed"])] = {
            "points": [{"step": p["step"], **{task: stratified(p[task]["correct"], strata[task]) for task in TASKS},
                        "answers": {task: p[task]["answers"] for task in TASKS}} for p in record["points"]],
            "loss_first_50": float(np.mean(record["losses"][:50])),
            "loss_last_50": float(np.mean(record["losses"][-50:])), "train_seconds": record["train_seconds"]}
    floors = {task: baselines(task, trunk_plan, SEQ_LEN) for task in TASKS}
    return {"plan": PLAN, "seeds": chosen, "settings": dataclasses.asdict(settings), "branch_point": start.point,
            "arms": arms, "floors": floors, "predictions": predictions(arms)}


def final(arms: dict, arm: str, seed: str, task: str, stratum: str = "all") -> dict:
    return arms[arm][seed]["points"][-1][task][stratum]


def predictions(arms: dict) -> dict:
    """U1-U4 per seed and overall, as the plan states them."""
    seeds_ = sorted(arms["sop"], key=int)
    checks = {
        "U1": {s: final(arms, "nsp", s, "nsp")["wilson"][0] > LEAVES_CHANCE_LOW for s in seeds_},
        "U2": {s: final(arms, "sop", s, "sop", "no_quote")["accuracy"] < QUOTE_FREE_CEILING for s in seeds_},
        "U3": {s: NO_ORDER_BAND[0] <= final(arms, "nsp", s, "sop")["accuracy"] <= NO_ORDER_BAND[1] for s in seeds_},
        "U4": {s: final(arms, "sop", s, "nsp", "no_quote")["accuracy"] < QUOTE_FREE_CEILING for s in seeds_},
    }
    return {name: {"per_seed": per_seed, "holds": all(per_seed.values())} for name, per_seed in checks.items()}


# ---------------------------------------------------------------------------------------------- figure and table
STRATA = (("all", "all pairs", "-"), ("quote", "quote pairs", "--"), ("no_quote", "quote-free pairs", ":"))


def figure(result: dict):
    """Each head on each task against steps (a line per seed), one panel per task, with the floors as bands."""
    fig, axes = book_figure(1, 2, height=4.4)
    colours = {"sop": "tab:blue", "nsp": "tab:orange"}
    drawn = [45.0, 70.0]  # every value drawn, so that the axes hold each point
    with book_style():
        for ax, task in zip(axes, TASKS):
            floor = result["floors"][task]
            name = "surface_regression" if task == "sop" else "topic_regression"
            value = floor[name]["all"]
            ax.axhspan(100 * value["wilson"][0], 100 * value["wilson"][1], color="grey", alpha=0.2,
                       label=f"{name.replace('_', ' ')} {100 * value['accuracy']:.1f}%")
            for arm in ARMS:
                for seed, record in result["arms"][arm].items():
                    for stratum, label, style in STRATA[:1] + STRATA[2:]:
                        xs = [p["step"] for p in record["points"]]
                        ys = [100 * p[task][stratum]["accuracy"] for p in record["points"]]
                        drawn += ys
                        first = seed == min(result["arms"][arm], key=int)
                        ax.plot(xs, ys, color=colours[arm], ls=style, marker="o", ms=3, lw=0.9,
                                label=f"{arm.upper()} head, {label}" if first else None)
            ax.axhline(50, color="black", lw=0.6)
            ax.set(xlabel="supervised step", ylabel=f"{task.upper()} held-out accuracy %",
                   title=f"read on {task.upper()} pairs")
            drawn += [100 * value["wilson"][0], 100 * value["wilson"][1]]
        for ax in axes:
            ax.set_ylim(min(drawn) - 2, max(drawn) + 2)
        legend = {}  # every panel's entries once: the SOP panel's floor and the NSP panel's
        for ax in axes:
            legend.update(zip(*reversed(ax.get_legend_handles_labels())))
        fig.legend(list(legend.values()), list(legend), loc="lower center", ncols=2)
        fig.tight_layout(rect=(0, 0.22, 1, 1))
    return fig


def table(result: dict) -> str:
    out = ["### Supervised SOP and NSP from one encoder, equal budgets", "",
           "| arm | seed | read on | all | quote | quote-free |", "|---|---|---|---|---|---|"]
    for arm in ARMS:
        for seed in sorted(result["arms"][arm], key=int):
            for task in TASKS:
                cells = [f"{100 * final(result['arms'], arm, seed, task, s)['accuracy']:.1f}"
                         for s in ("all", "quote", "no_quote")]
                out.append(f"| {arm} | {seed} | {task} | {' | '.join(cells)} |")
    out += [""] + [f"- {name}: {'holds' if v['holds'] else 'fails'} ({PLAN['predictions'][name]})"
                   for name, v in result["predictions"].items()]
    return "\n".join(out)
