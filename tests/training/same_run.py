"""One check for "this resumed run is the run never stopped", shared by the resume tests (one process, a fake
world of ranks, and real torchrun nodes)."""

from __future__ import annotations

import torch
from safetensors.torch import load_file

from albert_mini.training.checkpoint import list_checkpoints
from albert_mini.training.rundir import read_metrics


def log_without_clocks(out) -> list[dict]:
    """metrics.jsonl as its readers take it, without the resume lines and the wall-clock fields, which differ
    between any two runs."""
    return [{k: v for k, v in m.items() if k not in ("elapsed_s", "tokens_per_s")}
            for m in read_metrics(out / "metrics.jsonl")[0] if m["type"] != "resume"]


def assert_same_run(out, straight, last: str = "step-0000008") -> None:
    """Final weights and optimizer state bit-identical to the run never stopped, and its log line for line."""
    ours, theirs = list_checkpoints(out)[-1], list_checkpoints(straight)[-1]
    assert ours.name == theirs.name == last
    a, b = load_file(ours / "model.safetensors"), load_file(theirs / "model.safetensors")
    assert a.keys() == b.keys()
    for key in a:
        assert a[key].equal(b[key]), f"{key} differs after the resume"
    moments = [torch.load(c / "trainer_state.pt", weights_only=True)["optimizer"]["state"] for c in (ours, theirs)]
    assert moments[0].keys() == moments[1].keys()
    for key in moments[0]:
        for name, tensor in moments[0][key].items():
            assert torch.equal(torch.as_tensor(tensor), torch.as_tensor(moments[1][key][name])), f"{key} {name}"
    assert log_without_clocks(out) == log_without_clocks(straight)
