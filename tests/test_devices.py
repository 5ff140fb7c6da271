"""One device rule (albert_mini.devices) for pretraining, fine-tuning and the experiments: auto takes CUDA, then
Apple's GPU, then the CPU; a device that is not there is refused in one line naming the fix. The GPUs are faked
(torch.cuda / torch.backends.mps monkeypatched): these tests check the rule, not the hardware."""

from __future__ import annotations

import pytest
import torch
import torch.distributed

from albert_mini.devices import DEVICE_CHOICES, cpu_model, describe_device, resolve_device
from albert_mini.errors import UsageError
from albert_mini.training import distributed
from albert_mini.training.distributed import DistInfo, init_distributed


@pytest.fixture
def machine(monkeypatch):
    """Pretend this machine has `cuda` CUDA GPUs and/or Apple's GPU: machine(cuda=2, mps=True)."""

    def pretend(cuda: int = 0, mps: bool = False) -> None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda > 0)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: cuda)
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H100 80GB HBM3")
        monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)

    pretend()
    return pretend


@pytest.mark.parametrize("cuda, mps, expected", [
    (1, True, "cuda"),  # CUDA first, even beside an Apple GPU
    (0, True, "mps"),  # then Apple's GPU
    (0, False, "cpu"),  # then the CPU
])
def test_auto_takes_cuda_then_mps_then_the_cpu(machine, cuda, mps, expected):
    machine(cuda=cuda, mps=mps)
    assert resolve_device("auto").type == expected
    assert resolve_device(expected).type == expected  # and each device by its name


def test_the_cpu_is_always_there(machine):
    machine(cuda=0, mps=False)
    assert resolve_device("cpu") == torch.device("cpu")
    assert DEVICE_CHOICES == ("auto", "cpu", "cuda", "mps")


@pytest.mark.parametrize("name, problem", [
    ("cuda", "--device cuda: no CUDA GPU is available here"),
    ("cuda:1", "--device cuda:1: no CUDA GPU is available here"),
    ("mps", "--device mps: Apple's GPU (MPS) is not available here"),
])
def test_a_device_that_is_not_there_is_refused_in_one_line_naming_the_fix(machine, name, problem):
    machine(cuda=0, mps=False)
    with pytest.raises(UsageError) as error:
        resolve_device(name)
    message = str(error.value)
    assert message.startswith(problem) and "\n" not in message
    assert "use --device cpu, or --device auto" in message


def test_cuda_n_picks_one_gpu_and_a_missing_one_is_refused(machine):
    machine(cuda=2)
    assert resolve_device("cuda:1") == torch.device("cuda", 1)
    with pytest.raises(UsageError, match=r"this machine has 2 CUDA GPU\(s\), cuda:0 to cuda:1"):
        resolve_device("cuda:2")


@pytest.mark.parametrize("name", ["gpu", "CUDA", "cuda:x", "mps:0", "cpu:0", ""])
def test_an_unknown_device_name_is_refused_listing_the_choices(name):
    with pytest.raises(UsageError, match=r"--device must be one of auto, cpu, cuda, mps \(or cuda:N\)"):
        resolve_device(name)


def test_under_torchrun_each_process_takes_its_local_gpu_and_never_apples(machine):
    machine(cuda=2, mps=True)
    assert resolve_device("auto", local_rank=1) == torch.device("cuda", 1)
    with pytest.raises(UsageError, match="local rank 2, but this node has 2 CUDA GPU"):
        resolve_device("cuda", local_rank=2)
    machine(cuda=0, mps=True)
    assert resolve_device("auto", local_rank=0) == torch.device("cpu")  # one Apple GPU cannot serve several
    with pytest.raises(UsageError, match="use --device cpu under torchrun"):
        resolve_device("mps", local_rank=0)


def test_run_records_name_the_device_and_its_hardware(machine):
    machine(cuda=1)
    assert describe_device("cpu") == f"cpu: {cpu_model()}"
    assert cpu_model() and cpu_model() != "unknown CPU"
    assert describe_device(torch.device("cuda", 0)) == "cuda: NVIDIA H100 80GB HBM3"


# ---------------------------------------------------------------------- processes
def test_one_process_runs_on_the_resolved_device(machine):
    machine(cuda=0, mps=True)
    assert init_distributed("auto").device == torch.device("mps")
    assert init_distributed("cpu").device == torch.device("cpu")
    assert init_distributed(None).device == torch.device("mps")  # None: auto


@pytest.mark.parametrize("cuda, expected_backend, expected_device", [
    (2, "nccl", torch.device("cuda", 1)),  # one GPU per local rank
    (0, "gloo", torch.device("cpu")),
])
def test_torchrun_joins_nccl_on_gpus_and_gloo_otherwise(machine, monkeypatch, cuda, expected_backend,
                                                        expected_device):
    machine(cuda=cuda, mps=True)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "29500")
    joined, selected = [], []
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: False)
    monkeypatch.setattr(torch.distributed, "init_process_group",
                        lambda backend, timeout: joined.append((backend, timeout)))
    monkeypatch.setattr(torch.cuda, "set_device", lambda device: selected.append(device))
    monkeypatch.setattr(distributed, "end_with_agent", lambda: None)  # the test process has no torchrun agent
    info = init_distributed("auto")
    assert joined == [(expected_backend, distributed.group_timeout())]  # an explicit timeout, never torch's default
    assert (info.rank, info.world_size, info.local_rank, info.device) == (1, 2, 1, expected_device)
    assert selected == ([expected_device] if cuda else [])


def test_collectives_use_the_cpu_unless_nccl_needs_the_gpu():
    """The float64 sums are reduced where gloo (or no collective) wants them: never on MPS, which has no float64."""
    assert DistInfo(device=torch.device("mps")).reduce_device == torch.device("cpu")
    assert DistInfo(device=torch.device("cuda", 0)).reduce_device == torch.device("cpu")  # one process: no collective
    assert DistInfo(0, 2, 0, torch.device("cuda", 0)).reduce_device == torch.device("cuda", 0)  # nccl
    assert DistInfo(0, 2, 0, torch.device("cpu")).reduce_device == torch.device("cpu")  # gloo
    assert distributed.broadcast_flag(True, DistInfo(device=torch.device("mps"))) is True  # one process: as given


# ---------------------------------------------------------------------- how much a run may hold
def test_memory_capacity_is_the_gpus_total_or_the_machines_ram_and_swap(machine, monkeypatch):
    from types import SimpleNamespace

    from albert_mini.devices import memory_capacity

    total, what = memory_capacity("cpu")
    assert total >= 2**28 and what.startswith("this machine's ")  # at least 256 MiB: a total, not what is free
    machine(cuda=1)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: SimpleNamespace(total_memory=80 * 2**30))
    assert memory_capacity("cuda") == (80 * 2**30, "cuda: NVIDIA H100 80GB HBM3's memory")
