"""How long a set of experiments will take, printed before it starts: training speed measured now, scaled per model.

albert-mini's pretraining step (MLM + SOP heads, the budget's optimizer) is timed on random batches at each
sequence length the budget trains on; another model's cost is that time scaled by its FLOPs per token (encoder,
projection and MLM head). Evaluation is counted as forward passes at a third of a training step's cost per token.
Runs already in the cache cost nothing. It is an estimate: on a shared machine the speed can change during a run.
"""

from __future__ import annotations

import statistics

from ...model.config import AlbertConfig
from ...study.throughput import flops_per_token
from ...tasks.registry import get_task
from ...text.synthetic import SyntheticBatches
from ...training.pretraining_model import build_pretraining_model
from ...training.trainer import TrainConfig, train
from .budget import FAST, Budget, mini
from .measure import Pretraining
from .provenance import cpu_model

# Experiments without models to train: seconds of their last run (fast, full), from data/results/*.json.
FIXED_SECONDS = {"throughput": (3, 95), "memory": (2, 2)}
FINETUNE_SEQ_LEN = 128  # fine-tuning inputs are at most this long
MC_OPTIONS = 4  # austen-mc's answer options
MEASURED_BATCH = 8  # sequences per timed step


def work(config: AlbertConfig, seq_len: int) -> float:
    """Forward FLOPs per token of the encoder plus the MLM head (H -> E transform, E -> V decoder)."""
    E, H, V = config.embedding_size, config.hidden_size, config.vocab_size
    return flops_per_token(config, seq_len) + 2.0 * (H * E + E * V)


def step_seconds(budget: Budget, batch_size: int, seq_len: int, steps: int = 3) -> float:
    """Median seconds per pretraining step of albert-mini at this shape, the first (warm-up) step left out."""
    model = build_pretraining_model(mini(), "sop", seed=0, output_bias="zeros")
    source = SyntheticBatches(mini().vocab_size, batch_size, seq_len, seed=0)
    setup = budget.setup()
    result = train(model, source, TrainConfig(max_steps=1 + steps, log_every=1, progress=False),
                   optimizer=setup.optimizer, lr=setup.lr)
    lines = [h for h in result.history if h["type"] == "train"]
    # Each line covers one step: its tokens over its tokens per second is the step's time.
    seconds = [(b["tokens_seen"] - a["tokens_seen"]) / b["tokens_per_s"] for a, b in zip(lines, lines[1:])]
    return statistics.median(seconds)


def measured_speed(budget: Budget) -> dict[int, float]:
    """albert-mini training tokens per second at the budget's sequence lengths (and the fine-tuning length), timed
    on batches of at most MEASURED_BATCH sequences: a step's time grows with its tokens, and a full batch of the
    full budget took 6 s a step on a busy 2-core machine (an estimate of 100 s)."""
    setup = budget.setup()
    shapes = {FINETUNE_SEQ_LEN: setup.batch_size, **{p.seq_len: p.batch_size for p in setup.phases()}}
    steps = 2 if budget == FAST else 3
    return {T: min(B, MEASURED_BATCH) * T / step_seconds(budget, min(B, MEASURED_BATCH), T, steps)
            for T, B in sorted(shapes.items())}


def pretraining_seconds(run: Pretraining, budget: Budget, speed: dict[int, float]) -> float:
    """Training plus evaluation time of one pretraining run."""
    def cost(tokens: float, T: int) -> float:
        return tokens / speed[T] * work(run.config, T) / work(mini(), T)

    setup = budget.setup()
    seconds = sum(cost(phase.tokens, phase.seq_len) for phase in setup.phases())
    # Forward passes: MLM evaluation and smoothness twice (held-out batches), the SOP set, probes' training sets.
    forward = 3 * setup.eval_batches * setup.batch_size + budget.probe_eval
    forward += budget.probe_train * (run.task != "sop") + run.nsp * (budget.probe_eval + budget.probe_train)
    return seconds + cost(forward * setup.seq_len, setup.seq_len) / 3


def speed_at(speed: dict[int, float], seq_len: int) -> float:
    """Measured tokens/s at `seq_len`, or at the nearest length measured."""
    return speed.get(seq_len) or speed[min(speed, key=lambda T: abs(T - seq_len))]


def finetuning_seconds(item, speed: dict[int, float]) -> float:
    """Training plus scoring time of one fine-tuning run (inputs taken at their longest; a multiple-choice
    question is one sequence per option)."""
    sequences = MC_OPTIONS if get_task(item.task).kind == "multiple_choice" else 1
    return 1.2 * item.settings.steps * item.settings.batch_size * sequences * FINETUNE_SEQ_LEN / speed[FINETUNE_SEQ_LEN]


def estimate(names: list[str], experiments: dict, budget: Budget, seeds, cache) -> dict:
    """Pending and cached runs and the expected seconds, per experiment and in total. The training speed is
    measured only when a run is left to train (it takes most of an estimate's time)."""
    speed = _Speed(budget)
    seen: set[str] = set()
    per_experiment = {}
    pending = cached = shared = 0
    pretrained_sha = _pretrained_sha()
    for name in names:
        module = experiments[name]
        if not hasattr(module, "plan"):
            per_experiment[name] = FIXED_SECONDS.get(name, (1, 60))[budget != FAST]
            continue
        seconds = 0.0
        for item in module.plan(budget, seeds):
            if hasattr(item, "tokens_by_length"):  # a run that states its own training tokens (trunk, branch)
                spec = item.spec()
                if cache and cache.load(spec) is not None:
                    cached += 1
                    continue
                pending += 1
                seconds += 1.15 * sum(tokens / speed_at(speed, T) for T, tokens in item.tokens_by_length.items())
                continue
            is_pretraining = isinstance(item, Pretraining)
            spec = item.spec(budget) if is_pretraining else item.spec(pretrained_sha)
            key = cache.key(spec) if cache else repr(spec)
            found = cache.load(spec) if cache else None
            if key in seen:  # the same model in an earlier experiment of this command
                shared += 1
                continue
            if found is not None and (not is_pretraining or item.measured(found)):
                cached += 1
                continue
            seen.add(key)
            pending += 1
            seconds += pretraining_seconds(item, budget, speed) if is_pretraining else finetuning_seconds(item, speed)
        per_experiment[name] = seconds
    return {"seconds": sum(per_experiment.values()), "per_experiment": per_experiment, "pending": pending,
            "cached": cached, "shared": shared, "speed": dict(speed.measured or {}), "cpu": cpu_model()}


class _Speed:
    """measured_speed(budget), measured at the first look (a mapping of sequence length to tokens per second)."""

    def __init__(self, budget: Budget):
        self.budget, self.measured = budget, None

    def _all(self) -> dict[int, float]:
        if self.measured is None:
            self.measured = measured_speed(self.budget)
        return self.measured

    def __getitem__(self, seq_len: int) -> float:
        return self._all()[seq_len]

    def get(self, seq_len: int, default=None):
        return self._all().get(seq_len, default)

    def __iter__(self):
        return iter(self._all())


def _pretrained_sha() -> str | None:
    import json

    from ...paths import PRETRAINED_MODEL
    manifest = PRETRAINED_MODEL / "manifest.json"
    return json.loads(manifest.read_text())["sha256"] if manifest.exists() else None


def describe(report: dict) -> str:
    """The lines printed before a run starts."""
    speed = (", ".join(f"{tokens:,.0f} tokens/s at {T}" for T, tokens in report["speed"].items())
             + " (a busy machine makes it longer)" if report["speed"] else "not measured, nothing is left to train")
    parts = ", ".join(f"{name} {seconds / 60:.1f}" for name, seconds in report["per_experiment"].items())
    return (f"expected duration: {report['seconds'] / 60:.1f} min for {report['pending']} runs to train "
            f"({report['cached']} finished earlier, {report['shared']} shared between experiments) on {report['cpu']}\n"
            f"  per experiment (min): {parts}\n"
            f"  from albert-mini's training speed measured just now: {speed}")
