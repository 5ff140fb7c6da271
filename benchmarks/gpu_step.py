"""albert-base on one GPU against Hugging Face's AlbertForPreTraining: parity, training-step speed, a real run.

The engineer's path, item 6, as one prepared script for a lent GPU, run once:

1. the machine: torch, CUDA device, nvidia-smi's name and driver, the CPU (lscpu);
2. parity: our albert-base (fixed seed) converted with `to_hf`, both run on the same padded batch in eval mode,
   fp32 and under bf16 autocast (max abs differences of the MLM and sentence logits, and of the fp32 loss);
3. training-step throughput, ours beside HF with the same weights, batch and optimizer (fused AdamW on CUDA):
   fp32, bf16 autocast and bf16 autocast + torch.compile; a step = forward, MLM + sentence loss, backward,
   optimizer step. Ours is called as the run calls it (the MLM head at `max_predictions` gathered positions per
   sequence, a static shape). Three columns beside it: HF's AlbertForPreTraining (MLM logits at every position),
   "hf_gathered" (HF's encoder, then HF's MLM head only at the masked positions, gathered as ours: the same work
   as ours), and "run": the run's own step, `albert-mini pretrain` on Austen in that mode (Trainer, LAMB, the
   DataLoader, clipping, metrics; its tokens/s from metrics.jsonl, the first log window left out). Compile and
   warm-up time is reported apart; the timed blocks alternate (ABBA), median of the repeats, tokens/s and peak
   memory. albert-base first, then albert-large if the time budget allows;
4. end to end: `python -m albert_mini pretrain --help`, then a short real pretraining run on the Austen corpus
   with `--device cuda --bf16` into a temporary run directory (wall time, final loss from metrics.jsonl).

Every measurement is tried on its own: an error is recorded (JSON: with its traceback) and the rest goes on.
Results are rewritten after each measurement to OUT/gpu_step.json and OUT/gpu_step.md. Optional parts (HF's
compile, albert-large) start only while the time budget (--budget-s) allows; a stuck part is stopped by an alarm.
Without CUDA it runs on the CPU with the --quick sizes and says so.

    PYTHONPATH=. python3 benchmarks/gpu_step.py --out $OUT                  # GPU: about 7-8 minutes on an H100
    .venv/bin/python benchmarks/gpu_step.py --quick --out /tmp/gpu_quick    # tiny sizes; runs on the CPU too
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import platform
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch

# albert_mini's run lock imports filelock.lock_descriptor (filelock 3.30+). On an older filelock, as a GPU image may
# carry, this stand-in (an flock, what filelock does on Linux) lets the package import and the pretrain run go on.
LOCK_SHIM = """
import fcntl, filelock
if not hasattr(filelock, "lock_descriptor"):
    def lock_descriptor(fd, *, blocking=True, poll_interval=0.05):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            return False
        return True
    filelock.lock_descriptor = lock_descriptor
"""
try:
    import filelock
    NEEDS_LOCK_SHIM = not hasattr(filelock, "lock_descriptor")
except ImportError:
    NEEDS_LOCK_SHIM = False
if NEEDS_LOCK_SHIM:
    exec(LOCK_SHIM)
try:  # a package that does not import is recorded; the machine record is written all the same
    from albert_mini import AlbertConfig, AlbertForPreTraining
    from albert_mini.model.albert import masked_positions
    from albert_mini.model.hf import to_hf
    from albert_mini.specials import IGNORE_INDEX, PAD_ID
    IMPORT_ERROR = None
except Exception as import_error:
    IMPORT_ERROR = f"{type(import_error).__name__}: {import_error}"

REPO = Path(__file__).resolve().parent.parent
MASKED_FRACTION = 0.15
GIB = 2**30
MODES = (("fp32", False, False), ("bf16", True, False), ("bf16+compile", True, True))


@dataclass(frozen=True)
class Plan:
    """Sizes and time limits of one run: the GPU plan or the --quick one."""

    preset: str
    overrides: dict
    batch: tuple[int, int]  # (sequences, tokens) of a training step
    parity_batch: tuple[int, int]
    large_preset: str
    large_overrides: dict
    large_batch: tuple[int, int]
    warmup: int  # untimed steps per model and mode after the first (the compile step)
    steps: int  # steps in one timed block
    repeats: int  # timed blocks per model and mode
    budget_s: float  # optional parts start only while this much time since the start is not spent
    compile_s: float  # a compile is started only with this much budget left
    large_s: float  # albert-large is started only with this much budget left
    e2e_flags: list[str] = field(default_factory=list)  # pretrain flags, --device and --out added
    e2e_timeout_s: float = 90.0
    run_steps: int = 40  # steps of the "run" column's pretrain run (per model and mode)
    run_log_every: int = 10  # its log windows: the first (warm-up, compile) is left out
    run_timeout_s: float = 150.0


GPU_PLAN = Plan(
    preset="albert-base", overrides={}, batch=(32, 512), parity_batch=(8, 512),
    large_preset="albert-large", large_overrides={}, large_batch=(16, 512),
    warmup=2, steps=8, repeats=3, budget_s=480, compile_s=90, large_s=60,
    e2e_flags=["--preset", "albert-base", "--corpus", "austen", "--task", "sop", "--steps", "60", "--minutes", "1",
               "--batch-size", "32", "--seq-len", "128", "--eval-every", "0", "--eval-batches", "4",
               "--save-every", "0", "--log-every", "10", "--seed", "0"],
    e2e_timeout_s=90, run_steps=40, run_log_every=10, run_timeout_s=150,
)
QUICK_PLAN = Plan(
    preset="albert-nano", overrides={}, batch=(4, 64), parity_batch=(2, 64),
    large_preset="albert-nano", large_overrides=dict(hidden_size=128, num_hidden_layers=4, intermediate_size=512),
    large_batch=(4, 64), warmup=1, steps=2, repeats=2, budget_s=170, compile_s=45, large_s=20,
    e2e_flags=["--preset", "albert-nano", "--corpus", "austen", "--task", "sop", "--steps", "6", "--batch-size", "4",
               "--seq-len", "64", "--eval-every", "0", "--eval-batches", "1", "--save-every", "0", "--log-every", "2",
               "--seed", "0"],
    e2e_timeout_s=60, run_steps=4, run_log_every=2, run_timeout_s=90,
)


# ---------------------------------------------------------------------------------------------- bookkeeping
def failure(error: BaseException) -> dict:
    """An exception as a record: its one-line message and the end of its traceback."""
    return {"error": f"{type(error).__name__}: {error}"[:1500], "traceback": traceback.format_exc()[-4000:]}


@contextmanager
def time_limit(seconds: float):
    """Raise TimeoutError in the main thread after `seconds`, so one stuck part cannot use up the others' time."""
    def expire(signum, frame):
        raise TimeoutError(f"stopped after {seconds:.0f} s (the script's time budget)")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 1.0))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def free_memory() -> None:
    """Collect garbage and hand cached CUDA blocks back, between parts."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


class Report:
    """Results so far, rewritten to OUT/gpu_step.json and OUT/gpu_step.md after every measurement."""

    def __init__(self, out: Path, plan: Plan, device: torch.device, quick: bool):
        self.out, self.plan, self.device = out, plan, device
        self.start = time.perf_counter()
        self.data = {"script": "benchmarks/gpu_step.py", "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
                     "quick": quick, "device": str(device), "budget_s": plan.budget_s, "sections": {}}

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def left(self) -> float:
        """Seconds of the budget not yet spent."""
        return self.plan.budget_s - self.elapsed()

    def section(self, name: str, fn, *args, limit_s: float | None = None) -> dict:
        """Run fn(report, node, *args), which fills node; an exception or the alarm is recorded in node."""
        node = self.data["sections"].setdefault(name, {})
        limit = limit_s if limit_s is not None else max(30.0, self.left() + 45)
        print(f"\n== {name} (at {self.elapsed():.0f} s, {self.left():.0f} s of budget left)", flush=True)
        start = time.perf_counter()
        try:
            with time_limit(limit):
                fn(self, node, *args)
        except Exception as error:
            node.update(failure(error))
            print(f"   {name} failed: {node['error']}", flush=True)
        node["section_s"] = round(time.perf_counter() - start, 1)
        free_memory()
        self.save()
        return node

    def save(self) -> None:
        """Write both files (the JSON first: it holds everything)."""
        self.data["elapsed_s"] = round(self.elapsed(), 1)
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "gpu_step.json").write_text(json.dumps(self.data, indent=2, default=str) + "\n")
        (self.out / "gpu_step.md").write_text(markdown(self.data))


# ---------------------------------------------------------------------------------------------- models and steps
def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def build_pair(config: AlbertConfig, device: torch.device):
    """Our pretraining model (seed 0) and HF's AlbertForPreTraining with the same weights, both on `device`."""
    torch.manual_seed(0)
    ours = AlbertForPreTraining(config)
    hf = to_hf(ours)
    return ours.to(device), hf.to(device)


def make_batch(config: AlbertConfig, batch: int, seq: int, device: torch.device, padded: bool = False) -> dict:
    """Random ids, two segments, 15% of the real tokens labelled; with padded, every other row is 3/4 long."""
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, config.vocab_size, (batch, seq), generator=g)
    types = (torch.arange(seq) >= seq // 2).long().expand(batch, seq).clone()
    mask = torch.ones(batch, seq, dtype=torch.long)
    if padded:
        mask[1::2, 3 * seq // 4:] = 0
        ids[mask == 0], types[mask == 0] = PAD_ID, 0
    chosen = (torch.rand(batch, seq, generator=g) < MASKED_FRACTION) & (mask == 1)
    labels = torch.where(chosen, ids, torch.full_like(ids, IGNORE_INDEX))
    sop = torch.randint(0, 2, (batch,), generator=g)
    return {k: v.to(device) for k, v in dict(input_ids=ids, attention_mask=mask, token_type_ids=types,
                                             labels=labels, sentence_order_label=sop).items()}


def forward(model, batch: dict, hf: bool, with_labels: bool = True):
    """(loss, MLM logits, sentence logits) of either implementation; without labels the logits cover all tokens."""
    labels = dict(labels=batch["labels"], sentence_order_label=batch["sentence_order_label"]) if with_labels else {}
    if hf:
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                    token_type_ids=batch["token_type_ids"], **labels)
        return out.loss, out.prediction_logits, out.sop_logits
    out = model(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"], **labels)
    return out.loss, out.mlm_logits, out.sentence_logits


class HFGathered(torch.nn.Module):
    """HF's encoder, then HF's MLM head only at the masked positions (gathered as ours, padded to max_predictions)
    and its SOP head: the work our model does, on HF's modules."""

    def __init__(self, hf):
        super().__init__()
        self.hf = hf

    def forward(self, input_ids, attention_mask, token_type_ids, labels, sentence_order_label, max_predictions):
        out = self.hf.albert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        h = out.last_hidden_state
        positions, targets = masked_positions(labels, max_predictions)
        logits = self.hf.predictions(h.gather(1, positions[..., None].expand(-1, -1, h.size(-1))))
        mlm = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(), reduction="sum")
        sentence_logits = self.hf.sop_classifier(out.pooler_output)
        sentence = torch.nn.functional.cross_entropy(sentence_logits.float(), sentence_order_label.view(-1))
        return mlm / (labels != IGNORE_INDEX).sum().clamp(min=1) + sentence, logits, sentence_logits


def step_loss(model, batch: dict, kind: str):
    """The training loss of one implementation: "ours" (as the run calls it), "hf" or "hf_gathered"."""
    if kind == "hf":
        return forward(model, batch, hf=True)[0]
    inputs = dict(labels=batch["labels"], sentence_order_label=batch["sentence_order_label"],
                  max_predictions=batch["max_predictions"])
    if kind == "hf_gathered":
        return model(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"], **inputs)[0]
    return model(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"], **inputs).loss


def train_step(model, optimizer, batch: dict, kind: str, bf16: bool, device: torch.device) -> None:
    """Forward under autocast when bf16, MLM + sentence loss, backward, optimizer step."""
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
        loss = step_loss(model, batch, kind)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def dynamo_counts() -> dict:
    """Graph breaks and compiled graphs so far (torch._dynamo's counters; subtract two readings for one compile)."""
    counters = torch._dynamo.utils.counters
    return {"graph_breaks": sum(counters["graph_break"].values()), "graphs": counters["stats"]["unique_graphs"]}


def timed_block(model, optimizer, batch, kind, bf16, device, steps) -> tuple[float, float | None, float | None]:
    """Seconds per step over `steps` steps, with the peak and resident memory (GiB) on CUDA."""
    sync(device)
    resident = None
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
        resident = torch.cuda.memory_allocated(device) / GIB
    start = time.perf_counter()
    for _ in range(steps):
        train_step(model, optimizer, batch, kind, bf16, device)
    sync(device)
    seconds = (time.perf_counter() - start) / steps
    peak = torch.cuda.max_memory_allocated(device) / GIB if device.type == "cuda" else None
    return seconds, peak, resident


# ---------------------------------------------------------------------------------------------- the parts
def cpu_name() -> str:
    """The CPU's model name from /proc/cpuinfo (albert_mini.devices.cpu_model, without importing the package)."""
    try:
        return next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine() or "unknown CPU"


def device_name(device: torch.device) -> str:
    """The device as run records name it, e.g. "cuda: NVIDIA H100 80GB HBM3" (albert_mini.devices' form)."""
    return f"cuda: {torch.cuda.get_device_name(device)}" if device.type == "cuda" else f"cpu: {cpu_name()}"


def machine(report: Report, node: dict, device: torch.device) -> None:
    """Versions, devices and the CPU, as every benchmark here labels its numbers."""
    node.update(python=platform.python_version(), torch=torch.__version__, torch_cuda=torch.version.cuda,
                device=device_name(device), cpu=cpu_name(), cpu_count=os.cpu_count(),
                float32_matmul_precision=torch.get_float32_matmul_precision(),
                filelock=getattr(sys.modules.get("filelock"), "__version__", None),
                filelock_shim=NEEDS_LOCK_SHIM, albert_mini_import=IMPORT_ERROR or "ok")
    try:
        import transformers
        node["transformers"] = transformers.__version__
    except ImportError as error:
        node["transformers"] = f"missing: {error}"
    for key, cmd in (("lscpu_model", ["lscpu"]), ("git_commit", ["git", "rev-parse", "HEAD"]),
                     ("nvidia_smi", ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv"])):
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=20, cwd=REPO)
            text = done.stdout.strip() or done.stderr.strip()
            if key == "lscpu_model":
                text = next((line.split(":", 1)[1].strip() for line in text.splitlines()
                             if line.startswith("Model name")), text[:200])
            node[key] = text
        except (OSError, subprocess.SubprocessError) as error:
            node[key] = f"unavailable: {error}"
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        node["gpu"] = dict(name=props.name, capability=f"{props.major}.{props.minor}",
                           memory_gib=round(props.total_memory / GIB, 1), count=torch.cuda.device_count())
    for key in ("device", "gpu", "torch", "transformers", "nvidia_smi", "lscpu_model", "filelock_shim"):
        print(f"   {key}: {node.get(key)}", flush=True)


def differences(a: tuple, b: tuple) -> dict:
    """Max and mean abs differences of the MLM and sentence logits of two forward results."""
    mlm, sentence = (a[1].float() - b[1].float()).abs(), (a[2].float() - b[2].float()).abs()
    return dict(mlm_logits_max_abs=mlm.max().item(), mlm_logits_mean_abs=mlm.mean().item(),
                sentence_logits_max_abs=sentence.max().item())


def parity(report: Report, node: dict, device: torch.device) -> None:
    """Our model and its to_hf copy on the same padded batch: fp32, then both under bf16 autocast."""
    plan = report.plan
    config = AlbertConfig.from_preset(plan.preset, **plan.overrides)
    ours, hf = build_pair(config, device)
    ours.eval()
    hf.eval()
    batch = make_batch(config, *plan.parity_batch, device, padded=True)
    node.update(preset=plan.preset, batch=list(plan.parity_batch), padded_rows="every other row, 3/4 long",
                hf_attention=getattr(hf.config, "_attn_implementation", None))
    with torch.no_grad():
        reference = forward(ours, batch, hf=False, with_labels=False)
        theirs = forward(hf, batch, hf=True, with_labels=False)
        node["fp32"] = differences(reference, theirs)
        node["fp32"]["mlm_logits_max_abs_value"] = reference[1].abs().max().item()
        loss_ours, loss_hf = forward(ours, batch, hf=False)[0].item(), forward(hf, batch, hf=True)[0].item()
        node["fp32"].update(loss_ours=loss_ours, loss_hf=loss_hf, loss_abs_diff=abs(loss_ours - loss_hf))
        print(f"   fp32: MLM logits max |diff| {node['fp32']['mlm_logits_max_abs']:.2e}, sentence logits "
              f"{node['fp32']['sentence_logits_max_abs']:.2e}, loss {loss_ours:.6f} vs {loss_hf:.6f}", flush=True)
        report.save()
        with torch.autocast(device.type, dtype=torch.bfloat16):
            ours16 = forward(ours, batch, hf=False, with_labels=False)
            hf16 = forward(hf, batch, hf=True, with_labels=False)
        node["bf16_autocast"] = {"ours_vs_hf": differences(ours16, hf16),
                                 "ours_vs_fp32": differences(ours16, reference),
                                 "hf_vs_fp32": differences(hf16, reference)}
        b = node["bf16_autocast"]
        print(f"   bf16: ours vs HF MLM max |diff| {b['ours_vs_hf']['mlm_logits_max_abs']:.2e}; against fp32: ours "
              f"{b['ours_vs_fp32']['mlm_logits_max_abs']:.2e}, HF {b['hf_vs_fp32']['mlm_logits_max_abs']:.2e}",
              flush=True)


# C901 (complexity 18): one branch per mode and column of its table; split it once the table's columns settle.
def throughput(report: Report, node: dict, device: torch.device, preset: str, overrides: dict,  # noqa: C901
               shape: tuple[int, int], no_compile: str | None, workdir: Path) -> None:
    """Ours, HF's and HF gathered training step side by side in each mode (see MODES), then the run's own step;
    fills node["modes"] as it goes."""
    plan = report.plan
    torch._dynamo.reset()
    config = AlbertConfig.from_preset(preset, **overrides)
    ours, hf = build_pair(config, device)
    gathered = HFGathered(to_hf(ours.cpu()).to(device))  # its own copy of the weights, for its own optimizer
    ours.to(device)
    models = {"ours": ours.train(), "hf": hf.train(), "hf_gathered": gathered.train()}
    fused = device.type == "cuda"
    optimizers = {key: torch.optim.AdamW(m.parameters(), lr=1e-4, weight_decay=0.01, fused=fused)
                  for key, m in models.items()}
    batch = make_batch(config, *shape, device)
    # The most masked tokens of a row: the static width of the gathered heads (read once, before any timing).
    batch["max_predictions"] = int((batch["labels"] != IGNORE_INDEX).sum(1).max())
    tokens = shape[0] * shape[1]
    node.update(preset=preset, overrides=overrides, batch_size=shape[0], seq_len=shape[1], tokens_per_step=tokens,
                parameters=sum(p.numel() for p in ours.parameters()), optimizer=f"AdamW (fused={fused})",
                steps_per_block=plan.steps, blocks=plan.repeats, hf_attention=getattr(hf.config,
                                                                                      "_attn_implementation", None),
                max_predictions=batch["max_predictions"], modes={})
    for mode, bf16, compiled in MODES:
        entry = node["modes"].setdefault(mode, {})
        if compiled and no_compile:
            entry["skipped"] = no_compile
            continue
        runners = {}
        for key, model in models.items():
            if compiled and report.left() < plan.compile_s:
                entry[key] = {"skipped": f"time budget: {report.left():.0f} s left, a compile may take "
                                         f"{plan.compile_s:.0f} s"}
                continue
            try:
                breaks = dynamo_counts()
                runner = torch.compile(model) if compiled else model
                sync(device)
                start = time.perf_counter()
                train_step(runner, optimizers[key], batch, key, bf16, device)  # the compile, when compiled
                sync(device)
                first = time.perf_counter() - start
                start = time.perf_counter()
                for _ in range(plan.warmup):
                    train_step(runner, optimizers[key], batch, key, bf16, device)
                sync(device)
                entry[key] = {"first_step_s": round(first, 2), "warmup_s": round(time.perf_counter() - start, 2)}
                if compiled:
                    entry[key]["compile_s"] = round(first, 1)
                    entry[key].update({k: after - breaks[k] for k, after in dynamo_counts().items()})
                runners[key] = runner
            except Exception as error:
                entry[key] = failure(error)
                print(f"   {mode} {key}: warm-up failed: {entry[key]['error']}", flush=True)
                free_memory()
            report.save()
        blocks = {key: [] for key in runners}
        for r in range(plan.repeats):
            for key in (list(runners) if r % 2 == 0 else list(runners)[::-1]):  # ABBA: drifts hit both sides
                try:
                    seconds, peak, resident = timed_block(runners[key], optimizers[key], batch, key, bf16,
                                                          device, plan.steps)
                except Exception as error:
                    entry[key].update(failure(error))
                    print(f"   {mode} {key}: timed steps failed: {entry[key]['error']}", flush=True)
                    blocks.pop(key, None)
                    free_memory()
                    continue
                blocks[key].append(seconds)
                if peak is not None:
                    entry[key]["peak_gib"] = round(max(peak, entry[key].get("peak_gib", 0.0)), 2)
                    entry[key]["resident_gib"] = round(resident, 2)
                    entry[key]["step_gib"] = round(entry[key]["peak_gib"] - resident, 2)
            for key in list(runners):
                if key not in blocks:
                    runners.pop(key)
        for key, times in blocks.items():
            median = statistics.median(times)
            entry[key].update(ms_per_step=round(1000 * median, 2), tokens_per_s=round(tokens / median),
                              ms_per_step_blocks=[round(1000 * t, 2) for t in times])
        for other in ("hf", "hf_gathered"):
            if "ours" in blocks and other in blocks:
                entry[f"ours_over_{other}"] = round(entry["ours"]["tokens_per_s"] / entry[other]["tokens_per_s"], 3)
        if report.left() >= (plan.compile_s if compiled else 0):
            run_step(report, entry, device, preset, overrides, shape, bf16, compiled, workdir / f"run-{preset}-{mode}")
        else:
            entry["run"] = {"skipped": f"time budget: {report.left():.0f} s left"}
        line = ", ".join(f"{key} {entry[key]['tokens_per_s']:,} tok/s ({entry[key]['ms_per_step']} ms/step"
                         + (f", peak {entry[key]['peak_gib']} GiB" if "peak_gib" in entry[key] else "")
                         + (f", compile {entry[key]['compile_s']} s" if "compile_s" in entry[key] else "") + ")"
                         for key in blocks)
        ratio = "".join(f"; ours/{k[10:]} {entry[k]}x" for k in ("ours_over_hf", "ours_over_hf_gathered") if k in entry)
        run = entry.get("run", {})
        ratio += f"; run {run['tokens_per_s']:,} tok/s ({run.get('run_over_ours')} of ours)" if "tokens_per_s" in run \
            else ""
        print(f"   {preset} {mode}: {line or 'nothing measured'}{ratio}", flush=True)
        report.save()


def pretrain_command(workdir: Path) -> tuple[list[str], dict]:
    """How to start `albert-mini pretrain` here (with the filelock stand-in where needed), and its environment."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", ALBERT_MINI_CACHE=str(workdir / "cache"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    if NEEDS_LOCK_SHIM:  # the stand-in lock first, then the command as `python -m albert_mini` runs it
        launcher = LOCK_SHIM + "import runpy\nrunpy.run_module('albert_mini', run_name='__main__', alter_sys=True)"
        return [sys.executable, "-c", launcher, "pretrain"], env
    return [sys.executable, "-m", "albert_mini", "pretrain"], env


def run_step(report: Report, entry: dict, device: torch.device, preset: str, overrides: dict,
             shape: tuple[int, int], bf16: bool, compiled: bool, workdir: Path) -> None:
    """The run's own step in this mode: `albert-mini pretrain` on Austen (its tokenizer's vocabulary, masking at
    most the setup's 20 tokens a sequence), tokens/s of its log windows after the first, beside ours."""
    plan = report.plan
    base, env = pretrain_command(workdir)
    config = [f"{k}={v}" for k, v in overrides.items()]
    cmd = [*base, "--preset", preset, *(["--config", *config] if config else []), "--corpus", "austen",
           "--batch-size", str(shape[0]), "--seq-len", str(shape[1]), "--steps", str(plan.run_steps),
           "--log-every", str(plan.run_log_every), "--eval-every", "0", "--save-every", "0", "--eval-batches", "1",
           "--device", device.type, *(["--bf16"] if bf16 else []), *(["--compile"] if compiled else []),
           "--quiet", "--out", str(workdir / "run")]
    node = entry.setdefault("run", {})
    node["command"] = shlex.join(["python3", "-m", "albert_mini", *cmd[len(base) - 1:]])
    start = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=plan.run_timeout_s, cwd=REPO, env=env)
        node["rc"], node["stderr_tail"] = done.returncode, done.stderr.splitlines()[-8:]
    except subprocess.TimeoutExpired:
        node["rc"], node["timed_out"] = None, True
    node["wall_s"] = round(time.perf_counter() - start, 1)
    metrics = workdir / "run" / "metrics.jsonl"
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()] if metrics.exists() else []
    rates = [row["tokens_per_s"] for row in rows if row.get("type") == "train"][1:]
    if rates:
        node["tokens_per_s"] = round(statistics.median(rates))
        node["windows_tokens_per_s"] = [round(r) for r in rates]
        if "tokens_per_s" in entry.get("ours", {}):
            node["run_over_ours"] = round(node["tokens_per_s"] / entry["ours"]["tokens_per_s"], 3)
    elif node.get("rc") not in (0, None):
        node["error"] = "pretrain failed: " + " | ".join(node.get("stderr_tail", [])[-3:])


def end_to_end(report: Report, node: dict, device: torch.device, workdir: Path) -> None:
    """`pretrain --help`, then a short real pretraining run on Austen (bf16 on CUDA) as a subprocess."""
    plan = report.plan
    base, env = pretrain_command(workdir)
    start = time.perf_counter()
    shown = subprocess.run([*base, "--help"], capture_output=True, text=True, timeout=60, cwd=REPO, env=env)
    node["help"] = {"rc": shown.returncode, "seconds": round(time.perf_counter() - start, 1),
                    "flags_present": {f: f in shown.stdout for f in ("--device", "--bf16", "--compile", "--config")}}
    print(f"   pretrain --help: rc {shown.returncode}, {node['help']['flags_present']}", flush=True)
    run_dir = workdir / "run"
    cmd = [*base, *plan.e2e_flags, "--device", device.type, *(["--bf16"] if device.type == "cuda" else []),
           "--out", str(run_dir)]
    node["command"] = shlex.join(["python3", "-m", "albert_mini", *cmd[len(base) - 1:]])
    if NEEDS_LOCK_SHIM:
        node["launcher"] = "python3 -c: the filelock stand-in (LOCK_SHIM), then runpy of albert_mini"
        node["command"] += "  # launched with the filelock stand-in"
    timeout = min(plan.e2e_timeout_s, max(30.0, report.left() + 30))
    node["timeout_s"] = round(timeout)
    print(f"   {node['command']}", flush=True)
    start = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO, env=env)
        node["rc"], stdout, stderr = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as error:
        node["rc"], node["timed_out"] = None, True
        stdout, stderr = (x.decode(errors="replace") if isinstance(x, bytes) else x or ""
                          for x in (error.stdout, error.stderr))
    node["wall_s"] = round(time.perf_counter() - start, 1)
    node["stdout_tail"], node["stderr_tail"] = stdout.splitlines()[-12:], stderr.splitlines()[-12:]
    metrics = run_dir / "metrics.jsonl"
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()] if metrics.exists() else []
    train = [row for row in rows if row.get("type") == "train"]
    evals = [row for row in rows if row.get("type") == "eval"]
    if train:
        node["final_train"] = {k: train[-1].get(k) for k in ("step", "loss", "mlm_loss", "sentence_loss",
                                                              "tokens_per_s", "elapsed_s")}
        node["first_train_loss"] = train[0].get("loss")
    if evals:
        node["final_eval"] = {k: evals[-1].get(k) for k in ("step", "loss", "mlm_loss", "mlm_acc", "sentence_acc")}
    run_json = run_dir / "run.json"
    if run_json.exists():
        node["run_json_device"] = json.loads(run_json.read_text()).get("device")
    node["finished"] = node["rc"] == 0 and bool(train)
    final = node.get("final_train", {})
    print(f"   rc {node['rc']}, {node['wall_s']} s, finished {node['finished']}, last train step {final.get('step')} "
          f"loss {final.get('loss')}, {final.get('tokens_per_s')} tok/s; eval loss "
          f"{node.get('final_eval', {}).get('loss')}", flush=True)
    if node["rc"] != 0:
        print("   " + "\n   ".join(node["stderr_tail"][-5:]), flush=True)


# ---------------------------------------------------------------------------------------------- the readable table
def fmt(value, spec: str = "") -> str:
    if value is None:
        return "-"
    return format(value, spec) if spec else str(value)


def errors_in(node, path: str = ""):
    """(where, message) for every recorded error, depth first."""
    if isinstance(node, dict):
        if "error" in node:
            yield path or "script", node["error"]
        for key, value in node.items():
            if key != "error":
                yield from errors_in(value, f"{path}/{key}" if path else key)


def markdown(data: dict) -> str:
    """The results as a short report: machine, parity, throughput, the end-to-end run, errors."""
    s = data["sections"]
    m = s.get("machine", {})
    lines = [f"# gpu_step: albert_mini against HF AlbertForPreTraining on {m.get('device', data['device'])}", "",
             f"Started {data['started']}, {data.get('elapsed_s')} s so far; quick mode: {data['quick']}; "
             f"time budget {data['budget_s']} s.", "", "## Machine", "", "| | |", "|---|---|"]
    for key in ("device", "gpu", "nvidia_smi", "torch", "torch_cuda", "transformers", "python", "cpu",
                "lscpu_model", "cpu_count", "float32_matmul_precision", "filelock", "filelock_shim",
                "albert_mini_import", "git_commit"):
        if key in m:
            lines.append(f"| {key} | {str(m[key]).replace(chr(10), '; ')} |")
    p = s.get("parity", {})
    if "fp32" in p:
        lines += ["", f"## Parity ({p.get('preset')}, batch {p.get('batch')}, {p.get('padded_rows')}, eval mode; "
                      f"HF attention: {p.get('hf_attention')})", "",
                  "| comparison | MLM logits max abs diff | MLM logits mean abs diff | sentence logits max abs diff |",
                  "|---|---|---|---|"]
        rows = [("fp32: ours vs HF", p["fp32"])]
        rows += [(f"bf16 autocast: {k.replace('_', ' ')}", v) for k, v in p.get("bf16_autocast", {}).items()]
        for label, d in rows:
            lines.append(f"| {label} | {fmt(d.get('mlm_logits_max_abs'), '.3e')} | "
                         f"{fmt(d.get('mlm_logits_mean_abs'), '.3e')} | "
                         f"{fmt(d.get('sentence_logits_max_abs'), '.3e')} |")
        f = p["fp32"]
        lines += ["", f"fp32 loss (MLM + SOP): ours {fmt(f.get('loss_ours'), '.6f')}, HF {fmt(f.get('loss_hf'), '.6f')}"
                      f" (abs diff {fmt(f.get('loss_abs_diff'), '.2e')}); largest |MLM logit| "
                      f"{fmt(f.get('mlm_logits_max_abs_value'), '.2f')}."]
    runs = [(name, s[name]) for name in s if name.startswith("throughput") and "modes" in s[name]]
    if runs:
        lines += ["", "## Training step (forward, MLM + sentence loss, backward, optimizer step)", "",
                  "Median of the timed blocks (ours and HF alternate, ABBA). Peak: max_memory_allocated during the "
                  "model's steps, everything resident included (both models' weights and optimizer states: the "
                  "resident column); step = peak - resident. First step: the compile, for compiled modes.", "",
                  "| model | batch | mode | impl | tokens/s | ms/step | ours/it | peak GiB | step GiB | resident GiB "
                  "| first step s | warm-up s |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for _, t in runs:
            label = t["preset"] + (f" ({', '.join(f'{k}={v}' for k, v in t['overrides'].items())})"
                                   if t.get("overrides") else "")
            for mode, entry in t["modes"].items():
                if "skipped" in entry:
                    lines.append(f"| {label} | {t['batch_size']}x{t['seq_len']} | {mode} | both | skipped: "
                                 f"{entry['skipped']} | | | | | | | |")
                    continue
                for key in ("ours", "hf", "hf_gathered", "run"):
                    e = entry.get(key, {})
                    speed = fmt(e.get("tokens_per_s"), ",") if "tokens_per_s" in e else (
                        "skipped" if "skipped" in e else "error" if "error" in e else "-")
                    ratio = (fmt(entry.get(f"ours_over_{key}")) if key.startswith("hf") else
                             f"run/ours {fmt(e.get('run_over_ours'))}" if key == "run" else "")
                    lines.append(f"| {label} | {t['batch_size']}x{t['seq_len']} | {mode} | {key} | {speed} | "
                                 f"{fmt(e.get('ms_per_step'))} | {ratio} | {fmt(e.get('peak_gib'))} | "
                                 f"{fmt(e.get('step_gib'))} | {fmt(e.get('resident_gib'))} | "
                                 f"{fmt(e.get('first_step_s'))} | {fmt(e.get('warmup_s'))} |")
        t = runs[0][1]
        lines += ["", f"Optimizer {t.get('optimizer')}; {t.get('steps_per_block')} steps per block, "
                      f"{t.get('blocks')} blocks; HF attention: {t.get('hf_attention')}. Ours computes MLM logits at "
                      f"the masked positions only ({t.get('max_predictions')} gathered a sequence), HF at every "
                      "position, hf_gathered as ours on HF's modules (the same work). run: `albert-mini pretrain` in "
                      "that mode on Austen (LAMB, the Trainer, the DataLoader; the tokenizer's 8000-piece vocabulary, "
                      "at most 20 masked tokens a sequence), tokens/s of its log windows after the first."]
    skipped = [f"- {name} skipped: {node['skipped']}" for name, node in s.items() if "skipped" in node]
    lines += ["", *skipped] if skipped else []
    e = s.get("end_to_end", {})
    if e:
        final, last_eval, shown = e.get("final_train", {}), e.get("final_eval", {}), e.get("help", {})
        lines += ["", "## End to end: albert-mini pretrain", "", f"`{e.get('command', '-')}`", "",
                  f"- `pretrain --help`: rc {shown.get('rc')}, flags {shown.get('flags_present')}",
                  f"- rc {e.get('rc')}{' (timed out)' if e.get('timed_out') else ''}, wall {e.get('wall_s')} s "
                  f"(timeout {e.get('timeout_s')} s), finished: {e.get('finished')}, run.json device: "
                  f"{e.get('run_json_device')}",
                  f"- train loss {fmt(e.get('first_train_loss'), '.3f')} at the first log, "
                  f"{fmt(final.get('loss'), '.3f')} at step {final.get('step')} "
                  f"({fmt(final.get('tokens_per_s'), ',.0f')} tokens/s); held-out loss "
                  f"{fmt(last_eval.get('loss'), '.3f')}, MLM accuracy {fmt(last_eval.get('mlm_acc'), '.3f')}"]
    errors = list(errors_in(s))
    lines += ["", "## Errors", ""] + ([f"- {where}: {message.splitlines()[0]}" for where, message in errors]
                                      if errors else ["none"])
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, type=Path, help="folder for gpu_step.json and gpu_step.md")
    parser.add_argument("--quick", action="store_true", help="tiny sizes and few steps (runs on the CPU too)")
    parser.add_argument("--skip-compile", action="store_true", help="leave out the torch.compile mode")
    parser.add_argument("--budget-s", type=float, help="time budget for the optional parts (default 480, quick 170)")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    quick = args.quick or device.type != "cuda"
    if device.type != "cuda":
        print(f"no CUDA here: running on the CPU ({cpu_name()}, {torch.get_num_threads()} threads) with the --quick "
              "sizes", flush=True)
    plan = QUICK_PLAN if quick else GPU_PLAN
    if args.budget_s is not None:
        plan = dataclasses.replace(plan, budget_s=args.budget_s)
    report = Report(args.out, plan, device, quick)
    report.data.update(skip_compile=args.skip_compile, plan=dataclasses.asdict(plan))
    report.save()
    no_compile = "--skip-compile" if args.skip_compile else None
    with tempfile.TemporaryDirectory(prefix="gpu_step_") as tmp:
        report.section("machine", machine, device, limit_s=60)
        if IMPORT_ERROR:
            report.data["sections"]["import"] = {"error": f"albert_mini does not import: {IMPORT_ERROR}"}
            print(f"albert_mini does not import ({IMPORT_ERROR}); nothing else can run", flush=True)
            report.save()
            sys.exit(1)
        report.section("parity", parity, device, limit_s=120)
        report.section("throughput", throughput, device, plan.preset, plan.overrides, plan.batch, no_compile,
                       Path(tmp))
        report.section("end_to_end", end_to_end, device, Path(tmp), limit_s=plan.e2e_timeout_s + 60)
        if report.left() >= plan.large_s:
            need = plan.large_s + 2 * plan.compile_s  # compile albert-large only when both sides fit
            too_little = f"time budget: {report.left():.0f} s left, compiling both sides needs {need:.0f} s"
            large_no_compile = no_compile or (too_little if report.left() < need else None)
            report.section("throughput_large", throughput, device, plan.large_preset, plan.large_overrides,
                           plan.large_batch, large_no_compile, Path(tmp))
        else:
            report.data["sections"]["throughput_large"] = {
                "skipped": f"time budget: {report.left():.0f} s left, albert-large needs {plan.large_s:.0f} s"}
            print(f"\n== throughput_large skipped: {report.left():.0f} s of budget left", flush=True)
    report.save()
    errors = list(errors_in(report.data["sections"]))
    print(f"\ndone in {report.elapsed():.0f} s; {len(errors)} error(s) recorded; wrote {args.out / 'gpu_step.json'} "
          f"and {args.out / 'gpu_step.md'}", flush=True)
    for where, message in errors:
        print(f"   {where}: {message.splitlines()[0]}", flush=True)


if __name__ == "__main__":
    main()
