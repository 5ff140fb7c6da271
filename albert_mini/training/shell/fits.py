"""Whether a model and batch can train on a device: the closed-form memory of one training step (parameters,
gradients, optimizer states, activations) against the device's memory, checked for every caller that builds a run
before anything is allocated (albert_mini.study.memory measures the same and compares, for chapter 9).

Sharing shrinks the first three (they scale with the distinct parameters) but not the activations, which every
one of the L layer applications must keep for the backward pass.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ...devices import memory_capacity
from ...errors import UsageError
from ...model.config import AlbertConfig
from ...model.counting import count_parameters
from ...text.masking import prediction_budget

OPTIMIZER_STATES = {"sgd": 0, "momentum": 1, "adamw": 2, "lamb": 2}  # fp32 values kept per parameter


@dataclass
class MemoryReport:
    """Bytes needed for one training step, by kind."""

    parameters: int
    gradients: int
    optimizer_states: int
    activations: int

    @property
    def total(self) -> int:
        return self.parameters + self.gradients + self.optimizer_states + self.activations

    def as_dict(self) -> dict[str, int]:
        return {**asdict(self), "total": self.total}


def parameter_bytes(n_params: int, optimizer: str = "lamb") -> int:
    """fp32 bytes that grow with the parameter count: the weights, their gradients and the optimizer's states."""
    if optimizer not in OPTIMIZER_STATES:
        raise ValueError(f"unknown optimizer {optimizer!r}; choose one of {', '.join(OPTIMIZER_STATES)}")
    return 4 * (2 + OPTIMIZER_STATES[optimizer]) * n_params


def activation_bytes(config: AlbertConfig, batch_size: int, seq_len: int, masked_per_sequence: int,
                     padded: bool = False) -> int:
    """Bytes that albert_mini's AlbertForPreTraining saves for backward in fp32 with dropout 0 (closed form).

    Exact for this implementation (see tests): per token and layer application it keeps the layer input, q, k,
    v, the attention output and its log-sum-exp, two LayerNorm inputs with their statistics, the FFN input,
    and the FFN's two I-wide tensors: 8H + 2I + heads + 4 floats. `padded` adds the additive attention mask.
    `masked_per_sequence` is P, the positions per sequence the MLM head runs at (`mlm_logits` is (B, P, V)):
    `max_predictions` when the call gives it (the trainer's masker cap), else the batch's largest masked count.
    """
    B, T, rows = batch_size, seq_len, batch_size * masked_per_sequence  # rows: the B x P the MLM head runs at
    E, H, I, V = config.embedding_size, config.hidden_size, config.intermediate_size, config.vocab_size
    heads, tokens = config.num_attention_heads, batch_size * seq_len
    applications = config.num_hidden_layers * config.inner_group_num
    floats = tokens * (E + 2)  # embedding LayerNorm input and statistics
    if config.embedding_projection:
        floats += tokens * E  # the projection's input (otherwise it is the first layer's input, counted there)
    floats += applications * tokens * (8 * H + 2 * I + heads + 4)
    floats += tokens * H + B * H  # final hidden states (kept whole for the pooler's slice), pooler output
    # The MLM head runs at B x P gathered positions (the masked ones, then padding), not at the N masked ones
    # alone: padding rows are allocated and kept like real ones, so they count here.
    floats += rows * (H + 3 * E + 2 + V)  # MLM head at the B x P positions, log-softmax over V
    floats += 2 + 2 * B  # two scalar losses, sentence log-softmax
    if padded:
        floats += tokens  # the additive attention mask, shared by every layer
    # int64: input ids, token types, position ids; the gather's (B, P) index and the (B, P) MLM targets; the
    # sentence targets; and the masked count the MLM mean divides by (a 0-d tensor, so the host never reads it).
    integers = 2 * tokens + T + 2 * rows + B + 1
    return 4 * floats + 8 * integers


def training_memory(config: AlbertConfig, batch_size: int, seq_len: int, masked_per_sequence: int | None = None,
                    optimizer: str = "lamb") -> MemoryReport:
    """Memory of one fp32 training step of AlbertForPreTraining, computed from the config (no tensors made)."""
    if masked_per_sequence is None:
        masked_per_sequence = prediction_budget(seq_len)  # the reference's defaults: 15%, at most 20
    n = count_parameters(config, heads=True)
    fp32 = 4 * n  # one float per parameter
    return MemoryReport(
        parameters=fp32, gradients=fp32, optimizer_states=parameter_bytes(n, optimizer) - 2 * fp32,
        activations=activation_bytes(config, batch_size, seq_len, masked_per_sequence),
    )


@dataclass(frozen=True)
class StepFit:
    """One training step's estimate against a device's memory: whether it fits, and the numbers of a refusal."""

    fits: bool
    total: int  # bytes of the largest step (its activations halved under bf16)
    states: int  # of which weights, gradients and optimizer states
    activations: int  # and activations
    limit: int  # the device's capacity
    where: str  # what that capacity is, for messages ("this machine's RAM", ...)


def step_fit(config: AlbertConfig, device, shapes, optimizer: str = "lamb", bf16: bool = False,
             mask_prob: float = 0.15, max_predictions: int = 20) -> StepFit | None:
    """Whether one training step of `config` fits in `device`'s memory (albert_mini.devices.memory_capacity), for
    the largest of `shapes` ((batch_size, seq_len) pairs: a schedule's phases), with `mask_prob` of the tokens
    masked, at most `max_predictions` a sequence; None when the device's capacity is unknown. The step is the fp32
    estimate (`training_memory`); bf16 halves its activations at most."""
    capacity = memory_capacity(device)
    if capacity is None:
        return None
    limit, where = capacity
    need = max((training_memory(config, batch_size, seq_len, prediction_budget(seq_len, mask_prob, max_predictions),
                                optimizer) for batch_size, seq_len in shapes), key=lambda report: report.total)
    activations = need.activations // 2 if bf16 else need.activations
    total = need.total - need.activations + activations
    return StepFit(total <= limit, total, need.parameters + need.gradients + need.optimizer_states, activations,
                   limit, where)


def _size(n: int) -> str:
    """Bytes as a person reads them: 23.5 GiB, 19.4 TiB, 647.3 PiB."""
    for unit in ("GiB", "TiB", "PiB"):
        if n < 1024**4 or unit == "PiB":
            return f"{n / 1024**3:,.1f} {unit}"
        n /= 1024
    return ""  # not reached


def check_fits(setup, config, device, phases) -> None:
    """Refuse a model and batch whose training step cannot fit on `device`, before anything is allocated (else
    the allocator fails with a traceback, or the kernel kills the process): the closed-form estimate of one fp32
    step of the largest of the schedule's `phases` against the device's total memory, in one verdict. The estimate
    leaves out what it cannot know (the data, the framework), so it errs low: a run refused here could not have
    fitted. `config` is the run's model, its vocabulary the tokenizer's; `setup` a PretrainingSetup."""
    shapes = [(p.batch_size, p.seq_len) for p in phases]
    verdict = step_fit(config, device, shapes, setup.optimizer, setup.bf16, setup.mask_prob,
                       setup.max_predictions or 20)
    if verdict is None or verdict.fits:
        return
    model = f"{setup.preset} with --config {' '.join(setup.config)}" if setup.config else setup.preset
    raise UsageError(f"{model} at --batch-size {setup.batch_size} x --seq-len {setup.seq_len} needs about "
                     f"{_size(verdict.total)} to train (weights, gradients and {setup.optimizer}'s states "
                     f"{_size(verdict.states)}, activations {_size(verdict.activations)}), more than "
                     f"{verdict.where} ({_size(verdict.limit)}); choose a smaller model (--config hidden_size, "
                     "max_position_embeddings, ...), --batch-size or --seq-len")
