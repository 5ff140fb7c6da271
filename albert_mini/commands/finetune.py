"""`albert-mini finetune`: fine-tune one task and print its test score.

    albert-mini finetune --task polarity --init data/pretrained/albert-mini-austen

The fine-tuning itself (the task objective and batches, models from a checkpoint, HF weights or random
initialisation, scoring, the run directory: `run_task`) is albert_mini.tasks.finetuning; this module reads the
flags, checks the files and calls `run_task` with the run's record.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..choices import DEVICE_CHOICES
from ..cli import positive_float, positive_int
from ..cli import run as run_cli
from ..cli import seed as seed_type
from ..errors import UsageError
from ..model.config import AlbertConfig
from ..paths import PRETRAINED_MODEL, recorded_path
from ..safe_files import Writes, atomic_write_bytes
from ..tasks.austen_tasks import TASKS_DIR
from ..tasks.polarity import CACHE_DIR as POLARITY_DIR
from ..tasks.registry import FILE_FORMATS, TASKS, file_task, get_task
from ..training import preemption
from ..training.setup import FREE_ON_RESUME
from . import command_parser

WRITES = Writes("finetune", outputs="--save FILE (the weights; --overwrite to replace one); --out DIR (a run "
                "directory: its own files only)",
                inputs="--init (default: the shipped model), --tokenizer (default: the Austen tokenizer), "
                       "--train-file and --test-file (or the built-in task's data)")


def inputs_of(args) -> list:
    """Every file a fine-tuning run reads, defaults resolved: the --init model (a folder: every file in it), the
    tokenizer, and the task's files (a built-in task's folders: data/tasks/, cache/polarity/)."""
    from ..text.tokenizer import DEFAULT_DIR as TOKENIZER_DIR

    init = None if args.init == "random" else args.init
    tokenizer = args.tokenizer or TOKENIZER_DIR / "spiece.model"
    task_files = [args.train_file, args.test_file] if args.format else [TASKS_DIR, POLARITY_DIR]
    return [init, tokenizer, *task_files]


def build_parser():
    parser = command_parser(
        "finetune",
        description="Fine-tune albert_mini on a task and score its test split.",
        epilog="examples: albert-mini finetune --task polarity   (from the shipped model, "
               "data/pretrained/albert-mini-austen); albert-mini finetune --format squad "
               "--train-file train.json --test-file dev.json --init DIR. --out follows the rule of pretraining "
               "runs: an absent or empty directory, or this very run (resumed); bad input ends with one line "
               "`error: ...` and exit status 2 (--debug: the traceback)")
    parser.add_argument("--task", choices=sorted(TASKS), help="a built-in task")
    parser.add_argument("--format", choices=sorted(FILE_FORMATS), help="or: files in an official format")
    parser.add_argument("--train-file", help="with --format: the training file (or RACE folder)")
    parser.add_argument("--test-file", help="with --format: the file scored at the end")
    parser.add_argument("--init", default=str(PRETRAINED_MODEL),
                        help="pretraining run/checkpoint directory, HF save_pretrained directory, or 'random' "
                             "(default: the shipped model data/pretrained/albert-mini-austen, wherever you run this)")
    parser.add_argument("--preset", default="albert-mini", help="model shape for --init random")
    parser.add_argument("--tokenizer", default=None, help="SentencePiece .model (default: the Austen tokenizer)")
    parser.add_argument("--steps", type=int, default=300, help="optimizer steps (default 300)")
    parser.add_argument("--batch-size", type=int, default=32, help="examples per step (default 32)")
    parser.add_argument("--lr", type=positive_float, default=3e-4, help="peak learning rate (default 3e-4)")
    parser.add_argument("--seed", type=seed_type, default=0, help="seed of the head's init and the data order")
    parser.add_argument("--max-train-examples", type=positive_int, default=None,
                        help="train on the first N examples only (N >= 1)")
    parser.add_argument("--max-eval-examples", type=positive_int, default=None,
                        help="score the first N test examples only (N >= 1)")
    parser.add_argument("--out", default=None,
                        help="run directory for run.json, metrics.jsonl and checkpoints; the same command resumes it")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace a different run in --out (only its own files) or an existing --save file")
    parser.add_argument("--save", default=None, help="write the fine-tuned weights (safetensors) to this file")
    parser.add_argument("--device", choices=DEVICE_CHOICES, default="auto",
                        help="where to compute: auto = a CUDA GPU if there is one, else Apple's GPU (MPS), else the "
                             "CPU (default); run.json and the result name the device used")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Command line: fine-tune one task from a pretrained encoder (or random init) and print its test score."""
    return run_cli(_main, argv)


def _main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if (args.task is None) == (args.format is None):
        parser.error("give either --task or --format with --train-file and --test-file")
    if args.format and not (args.train_file and args.test_file):
        parser.error("--format needs --train-file and --test-file")
    for flag, value in (("--steps", args.steps), ("--batch-size", args.batch_size)):
        if value < 1:
            raise UsageError(f"{flag} must be >= 1, got {value}")
    if args.save and Path(args.save).is_dir():
        example = Path(args.save) / "model.safetensors"
        raise UsageError(f"--save {args.save} is a directory; give a file path, e.g. {example}")
    from ..training import rundir

    if args.out:  # the run-directory rule first (its messages), then the write rule
        rundir.check_run_dir(Path(args.out))
    WRITES.check(files=[("--save", args.save)] if args.save else [],
                 folders=[("--out", args.out)] if args.out else [], inputs=inputs_of(args), overwrite=args.overwrite)
    preemption.enable()  # SIGTERM or SIGUSR1 while it trains: save after the step (--out), exit 128 + the signal
    return _finetune(args)


def _finetune(args) -> int:
    """Fine-tune as the library does (the run directory settled, locked and recorded by `run_task`)."""
    from ..tasks.finetuning import FinetuneSettings, run_task
    from ..text.corpus import fingerprint_files
    from ..text.tokenizer import Tokenizer
    from ..training.checkpoint import weights_bytes
    from ..training.run import recorded_command

    task = get_task(args.task) if args.task else file_task(args.format, args.train_file, args.test_file)
    tokenizer = Tokenizer.from_file(args.tokenizer) if args.tokenizer else Tokenizer.default()
    config = AlbertConfig.from_preset(args.preset) if args.init == "random" else None
    settings = FinetuneSettings(steps=args.steps, batch_size=args.batch_size, lr=args.lr, seed=args.seed,
                                max_train_examples=args.max_train_examples, max_eval_examples=args.max_eval_examples,
                                device=args.device)
    record = None
    if args.out:  # run.json: the flags, the tokenizer, the command and the files' fingerprints
        files = [f for f in (args.train_file, args.test_file) if f]
        record = {"kind": "finetune", "settings": run_settings(args), "tokenizer": tokenizer.file_reference(),
                  "command": recorded_command(), **({"corpus": fingerprint_files(files)} if files else {})}
    result = run_task(task, args.init, settings, tokenizer=tokenizer, config=config, out_dir=args.out,
                      progress=True, overwrite=args.overwrite, record=record)
    model = result.pop("model")
    if args.save:
        atomic_write_bytes(args.save, weights_bytes(model, {"task": result["task"]}))
    result.pop("history")
    print(json.dumps(result, indent=1))
    return 0


def run_settings(args) -> dict:
    """The flags that decide a fine-tuning run, each file named as pretraining's run.json names one (relative to
    the repository root inside it, else as given)."""
    settings = {k: v for k, v in sorted(vars(args).items()) if k not in FREE_ON_RESUME}
    for key in ("train_file", "test_file", "tokenizer", "init"):
        if settings[key] is not None and settings[key] != "random":
            settings[key] = recorded_path(settings[key])
    return settings
