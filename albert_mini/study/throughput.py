"""Training throughput of the paper's configurations on this machine, next to the paper's Speedup column."""

from __future__ import annotations

import gc
import statistics
import time

import torch

from ..model.config import AlbertConfig
from ..specials import FIRST_ORDINARY_ID

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["flops_per_token", "mlm_head_flops_per_token"]


def flops_per_token(config: AlbertConfig, seq_len: int) -> float:
    """Forward FLOPs per token of the encoder: every layer application counts, shared or not, plus attention."""
    E, H, I, L = config.embedding_size, config.hidden_size, config.intermediate_size, config.num_hidden_layers
    projection = E * H if config.embedding_projection else 0
    per_layer = 4 * H * H + 2 * H * I + 2 * seq_len * H  # q, k, v, output; two FFN matrices; scores and mixing
    return 2.0 * (projection + L * config.inner_group_num * per_layer)


def mlm_head_flops_per_token(config: AlbertConfig) -> int:
    """Forward FLOPs of the MLM head at one predicted position: the H -> E dense layer and the E -> V decoder
    (tied to the word embeddings), 2 per multiply-add; biases, the activation and the LayerNorm left out."""
    H, E, V = config.hidden_size, config.embedding_size, config.vocab_size
    return 2 * (H * E + E * V)


def measure_training_throughput(config: AlbertConfig, batch_size: int = 2, seq_len: int = 64, steps: int = 3,
                                seed: int = 0) -> float:
    """Median tokens/s of forward + backward of AlbertModel (no optimizer step) on random token ids."""
    from ..model.albert import AlbertModel

    torch.manual_seed(seed)
    config = config.replace(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = AlbertModel(config).train()
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(FIRST_ORDINARY_ID, config.vocab_size, (batch_size, seq_len), generator=g)
    times = []
    for step in range(steps + 1):  # the first step warms up allocator and kernels
        start = time.perf_counter()
        out = model(ids)
        (out.last_hidden_state.float().pow(2).mean() + out.pooler_output.sum()).backward()
        model.zero_grad(set_to_none=True)
        if step:
            times.append(time.perf_counter() - start)
    del model, out
    gc.collect()
    return batch_size * seq_len / statistics.median(times)


def relative_throughput(names: list[str], reference: str = "bert-large", **kwargs) -> dict[str, dict]:
    """Tokens/s of each preset and its speed relative to `reference`, with the FLOP-predicted ratio beside it."""
    if reference not in names:
        raise ValueError(f"the reference {reference!r} must be one of the measured presets {names}")
    seq_len = kwargs.get("seq_len", 64)
    measured = {name: measure_training_throughput(AlbertConfig.from_preset(name), **kwargs) for name in names}
    ref_flops = flops_per_token(AlbertConfig.from_preset(reference), seq_len)
    return {
        name: {
            "tokens_per_second": measured[name],
            "speedup": measured[name] / measured[reference],
            "flop_ratio": ref_flops / flops_per_token(AlbertConfig.from_preset(name), seq_len),
        }
        for name in names
    }
