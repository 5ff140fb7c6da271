"""Training memory: parameters, gradients, optimizer states and activations, computed and measured.

The closed form lives with the run's memory check (albert_mini.training.shell.fits); this module adds the
measurement it is tested against.
"""

from __future__ import annotations

import torch

from ..training.shell.fits import (  # noqa: F401  (the chapters' names for them)
    OPTIMIZER_STATES,
    MemoryReport,
    StepFit,
    activation_bytes,
    parameter_bytes,
    step_fit,
    training_memory,
)

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["measure_activation_bytes", "parameter_bytes", "training_memory"]


def measure_activation_bytes(model: torch.nn.Module, batch: dict) -> int:
    """Bytes of the distinct non-parameter tensors autograd saves during one forward pass of `model(**batch)`."""
    parameter_storages = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in parameter_storages:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        model(**batch)
    return sum(saved.values())
