"""One pretraining setup: every setting that decides a pretraining run, in one frozen dataclass checked once.

The command line's flags are its fields (`add_flags` derives the parser, as Hugging Face's HfArgumentParser does
from TrainingArguments); the experiments' budgets, the trunk and the recipe probes are overrides of it
(`dataclasses.replace`). Whatever builds a run from a setup (albert_mini.training.run) may trust it: a setup
that exists has passed `check`, so no later layer checks a flag again.

    setup = PretrainingSetup(steps=600, out="runs/mini", short_seq_len=64)
    setup.phases()   # (Phase(steps=540, seq_len=64, batch_size=64), Phase(steps=60, seq_len=128, batch_size=32))
    PretrainingSetup(steps=600, out="runs/e64", config=("embedding_size=64",)).model_config().embedding_size  # 64
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from dataclasses import dataclass, field

from ..choices import DEVICE_CHOICES, OPTIMIZERS, OUTPUT_BIASES, POSITION_INITS, SENTENCE_TASK_NAMES, check_device_name
from ..cli import SEED_MAX, nonnegative_float, positive_float
from ..cli import seed as seed_number
from ..errors import UnknownNameError, UsageError
from ..model.config import PRESETS, AlbertConfig, ConfigError
from ..specials import FIRST_ORDINARY_ID, PAD_ID

# What chapters import from here (the module's public face; albert_mini/README.md).
__all__ = ["PretrainingSetup", "in_process"]

NAMED_CORPORA = ("austen", "synthetic")
SPLIT_BY = {"file": "file", "blank-line": "blank_line"}  # --split-by value -> load_text_files mode
DEFAULT_HOLDOUT = 0.05
MASKINGS = ("dynamic", "static")
TRAIN_TOKENIZER = "albert-mini tokenizer train --text PATH... --vocab-size 8000 --out tok.model"
FLOAT32_MAX = 3.4028234663852886e38  # the largest float32: the optimizer's numbers must fit in one

# Settings that do not change what is computed: they may differ between a run and its resumption. The device is
# one of them: a resumption on another device is said and noted in run.json (training/trainer.py), not refused.
# Pretraining's and fine-tuning's in one list (commands/finetune.py's run_settings leaves them out too): --save and
# --debug are fine-tuning's flags, no PretrainingSetup field.
FREE_ON_RESUME = ("out", "minutes", "eval_every", "eval_batches", "save_every", "log_every", "keep", "overwrite",
                  "compile", "quiet", "device", "save", "debug")


@dataclass(frozen=True)
class Phase:
    """Steps of one sequence length: `steps` optimizer steps of `batch_size` sequences of `seq_len` tokens."""

    steps: int
    seq_len: int
    batch_size: int

    @property
    def tokens(self) -> int:
        return self.steps * self.seq_len * self.batch_size


def curriculum(steps: int, seq_len: int, batch_size: int, short_seq_len: int | None = None,
               short_fraction: float = 0.9, short_batch_size: int | None = None) -> tuple[Phase, ...]:
    """BERT's short-then-long schedule: round(short_fraction * steps) steps at short_seq_len, the rest at seq_len.

    The short phase has as many tokens per step as the long one (batch_size x seq_len / short_seq_len sequences)
    unless `short_batch_size` says otherwise. Without short_seq_len: one phase."""
    if short_seq_len is None:
        return (Phase(steps, seq_len, batch_size),)
    short = round(short_fraction * steps)
    short_batch = short_batch_size or batch_size * seq_len // short_seq_len
    return Phase(short, short_seq_len, short_batch), Phase(steps - short, seq_len, batch_size)


def flag(help: str, **argparse_options) -> dict:
    """A field's command-line flag: its help and argparse options (type, choices, nargs, metavar, required)."""
    return {"help": help, **argparse_options}


class Repeatable(argparse.Action):
    """A flag of nargs="+" that may be given again, its values gathered in a tuple: `--config a=1 --config b=2`
    is `--config a=1 b=2`."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, (*(getattr(namespace, self.dest, None) or ()), *values))


@dataclass(frozen=True, kw_only=True)
class PretrainingSetup:
    """What decides a pretraining run: model, text, sentence task, schedule, optimizer, data order, run folder.

    Fields with a `flag` are the pretraining command line's flags (in this order, with these defaults); the
    others are for code only (the recipe probes' knobs) and keep the command line's behaviour at their defaults.
    """

    preset: str = field(default="albert-mini", metadata=flag(
        "model size (default: albert-mini)", choices=list(PRESETS)))
    config: tuple[str, ...] = field(default=(), metadata=flag(
        "set fields of the model config on top of --preset, e.g. --config embedding_size=64 num_hidden_layers=4 "
        "(repeatable; the keys are AlbertConfig's, albert_mini/model/config.py; checked as the config checks "
        "them); config.json and run.json record the model built", nargs="+", action=Repeatable, metavar="KEY=VALUE"))
    corpus: str | tuple[str, ...] = field(default="austen", metadata=flag(
        "austen: the committed Austen novels (default); synthetic: random tokens, to test the machinery; or your own "
        "UTF-8 text: files, folders (their *.txt files) or glob patterns, with --tokenizer",
        nargs="+", metavar="NAME|PATH"))
    split_by: str | None = field(default=None, metadata=flag(
        "your own text: file = each file is one document (default); blank-line = blank lines separate documents and "
        "each line is a paragraph (BERT's input format)", choices=list(SPLIT_BY)))
    validation: tuple[str, ...] | None = field(default=None, metadata=flag(
        "your own text: held-out files for evaluation (default: hold out documents of --corpus)",
        nargs="+", metavar="PATH"))
    holdout_fraction: float | None = field(default=None, metadata=flag(
        f"your own text without --validation: fraction of the documents held out for evaluation, the same ones "
        f"whatever the file order or seed (default {DEFAULT_HOLDOUT:g}, at least one)", type=float))
    task: str = field(default="sop", metadata=flag(
        "sentence task beside MLM: sop (ALBERT), nsp (BERT) or none (MLM only); default sop",
        choices=list(SENTENCE_TASK_NAMES)))
    steps: int = field(default=0, metadata=flag(
        "optimizer steps; also the length of the learning-rate decay, which reaches 0 here", type=int, required=True))
    minutes: float | None = field(default=None, metadata=flag(
        "also stop after this much training wall time (whole run, counted across resumptions); the learning rate "
        "still follows --steps, so it has not reached 0 when time runs out", type=positive_float))
    out: str | None = field(default=None, metadata=flag(
        "run directory: config, metrics and checkpoints; resumed if it holds this run (see below)", required=True))
    batch_size: int = field(default=32, metadata=flag(
        "sequences per micro-batch per process (default 32)", type=int))
    seq_len: int = field(default=128, metadata=flag("tokens per sequence (default 128)", type=int))
    short_seq_len: int | None = field(default=None, metadata=flag(
        "train the first --short-fraction of the steps on sequences this long (BERT's curriculum), with "
        "--batch-size x --seq-len / this many sequences per micro-batch; evaluation uses --seq-len", type=int))
    short_fraction: float = field(default=0.9, metadata=flag(
        "fraction of --steps trained at --short-seq-len (default 0.9, as in BERT)", type=float))
    lr: float = field(default=1.76e-3, metadata=flag(
        "peak learning rate (default 1.76e-3, the paper's)", type=positive_float))
    warmup: int | None = field(default=None, metadata=flag(
        "linear warmup steps, 0 for none (default: 2.5%% of --steps, the paper's 3125 / 125000)", type=int))
    optimizer: str = field(default="lamb", metadata=flag(
        "lamb (the paper's) or adamw", choices=OPTIMIZERS))
    output_bias: str = field(default="unigram", metadata=flag(
        "start of the MLM output bias: unigram = log token frequencies of the training text (skips the phase where "
        "the model only learns frequencies; default), zeros = the reference", choices=OUTPUT_BIASES))
    weight_decay: float = field(default=0.01, metadata=flag(
        "decoupled weight decay (default 0.01)", type=nonnegative_float))
    clip_norm: float = field(default=1.0, metadata=flag(
        "global gradient-norm limit (default 1.0)", type=positive_float))
    accumulate: int = field(default=1, metadata=flag("micro-batches per optimizer step (default 1)", type=int))
    eval_every: int = field(default=50, metadata=flag(
        "steps between evaluations on held-out batches (0: only at the end; default 50)", type=int))
    eval_batches: int = field(default=8, metadata=flag("held-out batches per evaluation (default 8)", type=int))
    save_every: int = field(default=100, metadata=flag(
        "steps between checkpoints (0: only at the end; default 100)", type=int))
    keep: int = field(default=2, metadata=flag("checkpoints kept on disk, newest first (default 2)", type=int))
    log_every: int = field(default=10, metadata=flag("steps between metrics lines (default 10)", type=int))
    seed: int = field(default=0, metadata=flag(
        "seed of the model init, the data order and the masking", type=seed_number))
    masking: str = field(default="dynamic", metadata=flag(
        "dynamic: new instances and masks every epoch; static: built once, as the reference does",
        choices=MASKINGS))
    dupe_factor: int = field(default=1, metadata=flag(
        "static masking only: differently masked copies of the corpus (the reference used 40)", type=int))
    group_by_length: bool = field(default=False, metadata=flag(
        "batch training sequences of similar length, each batch trimmed to its longest: the same instances with "
        "almost no padding compute (off by default; changes the batches)"))
    tokenizer: str | None = field(default=None, metadata=flag(
        "SentencePiece .model file: required with your own text (train it with albert-mini tokenizer "
        "train --text ...); for austen the committed data/austen/spiece.model. The model's vocab_size is the "
        "tokenizer's"))
    bf16: bool = field(default=False, metadata=flag(
        "bf16 autocast: faster on GPUs and CPUs with AMX, about 5x slower on AVX2-only CPUs; not bit-comparable "
        "with fp32 runs"))
    compile: bool = field(default=False, metadata=flag("torch.compile the model (no gain measured on CPU)"))
    device: str = field(default="auto", metadata=flag(
        "where to compute: auto = a CUDA GPU if there is one, else Apple's GPU (MPS), else the CPU (default); under "
        "torchrun each process takes GPU LOCAL_RANK (nccl), or the CPU (gloo). run.json records the device used",
        choices=list(DEVICE_CHOICES)))
    overwrite: bool = field(default=False, metadata=flag(
        "when --out holds a run with other settings, on changed text or without run.json, delete that run's own "
        "files (run.json, config.json, metrics.jsonl, checkpoints/) first; never anything else, so a directory with "
        "other files is still refused"))
    quiet: bool = field(default=False, metadata=flag("no progress bar or metric lines on the terminal"))

    # For code only: the recipe probes' knobs. At these defaults a run is the command line's.
    short_batch_size: int | None = None  # None: as many tokens per step as the long phase
    mask_prob: float = 0.15  # share of tokens masked (the reference's masked_lm_prob)
    ngram: int = 3  # longest masked n-gram
    max_predictions: int | None = None  # masked tokens per sequence at most (None: the reference's 20)
    mlm_weight: float = 1.0  # weights of the two losses; the logged metrics stay unweighted
    sentence_weight: float = 1.0
    betas: tuple[float, float] = (0.9, 0.999)
    decay: str = "linear"  # linear to 0 at the last step, or "constant" after warm-up
    position_init: str = "normal"  # "sinusoidal": Vaswani et al.'s table scaled to initializer_range

    def __post_init__(self):
        corpus = (self.corpus,) if isinstance(self.corpus, str) else tuple(self.corpus)
        names = [c for c in corpus if c in NAMED_CORPORA]
        if names and len(corpus) > 1:
            raise UsageError(f"--corpus takes one named corpus ({' or '.join(NAMED_CORPORA)}) or your own text "
                             f"paths, not both (got {' '.join(corpus)}); to read a file called {names[0]}, write "
                             f"./{names[0]}")
        # A named corpus is kept as its name, your own text as a tuple of paths (run.json records a list).
        object.__setattr__(self, "corpus", names[0] if names else corpus)
        if self.validation is not None:
            object.__setattr__(self, "validation", tuple(self.validation))
        object.__setattr__(self, "betas", tuple(self.betas))
        # Resolved once: the --config items parsed here, the model config built by `check` and kept (both outside
        # the dataclass's fields, so they are neither compared nor recorded).
        object.__setattr__(self, "_overrides", parsed_config(self.config))
        object.__setattr__(self, "config", canonical_items(self._overrides))
        object.__setattr__(self, "_model_config", None)
        check(self)

    # ------------------------------------------------------------------ what the settings imply
    def phases(self) -> tuple[Phase, ...]:
        """The training schedule: one phase, or BERT's short-then-long curriculum (two)."""
        return curriculum(self.steps, self.seq_len, self.batch_size, self.short_seq_len, self.short_fraction,
                          self.short_batch_size)

    @property
    def warmup_steps(self) -> int:
        """--warmup, or 2.5% of the steps (the paper's 3,125 of 125,000)."""
        return self.warmup if self.warmup is not None else round(0.025 * self.steps)

    @property
    def own_text(self) -> bool:
        """Whether the corpus is the user's own files (not austen or synthetic)."""
        return not isinstance(self.corpus, str)

    def model_config(self, **fixed) -> AlbertConfig:
        """The run's model: the --preset with the --config fields set (built once), and `fixed` (the tokenizer's
        vocab_size) on top."""
        if self._model_config is None:
            object.__setattr__(self, "_model_config", self._config_of(lambda: AlbertConfig.from_preset(
                self.preset, **self._overrides)))
        config = self._model_config
        if all(getattr(config, key) == value for key, value in fixed.items()):
            return config
        return self._config_of(lambda: config.replace(**fixed))

    def _config_of(self, build) -> AlbertConfig:
        try:
            return build()
        except (ConfigError, UnknownNameError) as err:
            if not self._overrides:
                raise
            raise UsageError(f"--config {' '.join(self.config)}: {err}") from None

    def masking_options(self) -> dict:
        """The Masker options of the run: none at the defaults (the reference's masking)."""
        if (self.mask_prob, self.ngram, self.max_predictions) == (0.15, 3, None):
            return {}
        cap = self.max_predictions if self.max_predictions is not None else 20
        return {"masked_lm_prob": self.mask_prob, "ngram": self.ngram, "max_predictions": cap}

    def replace(self, **changes) -> PretrainingSetup:
        """A copy with some settings changed, checked again."""
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------------ the command line
    def settings(self) -> dict:
        """The flags that decide the numbers, as run.json records them (sorted; a path list as a list)."""
        return {f.name: _plain(getattr(self, f.name)) for f in sorted(cli_fields(), key=lambda f: f.name)
                if f.name not in FREE_ON_RESUME}

    def to_argv(self) -> list[str]:
        """The command-line flags that give this setup (defaults left out): `from_args(parse(to_argv()))` is it."""
        argv = []
        for f in cli_fields():
            value = getattr(self, f.name)
            if value == f.default:
                continue
            name = "--" + f.name.replace("_", "-")
            if isinstance(value, bool):
                argv.append(name)
            elif isinstance(value, tuple):
                argv += [name, *value]
            else:
                argv += [name, str(value)]
        return argv

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> PretrainingSetup:
        """The setup of parsed flags (anything else in the namespace, such as --debug, is ignored)."""
        return cls(**{f.name: getattr(args, f.name) for f in cli_fields() if hasattr(args, f.name)})


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


def in_process(**settings) -> PretrainingSetup:
    """A setup for a run trained inside another program (an experiment, the trunk, a probe): no run folder, no
    evaluation before the end, no progress bar."""
    return PretrainingSetup(**{"eval_every": 0, "save_every": 0, "quiet": True, **settings})


def cli_fields() -> list[dataclasses.Field]:
    """The fields that are command-line flags, in the order --help lists them."""
    return [f for f in dataclasses.fields(PretrainingSetup) if "help" in f.metadata]


def defaults() -> dict:
    """Every flag's default, as run.json records it (a tuple as a list)."""
    return {f.name: _plain(f.default) for f in cli_fields()}


def add_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per command-line field of PretrainingSetup, with its help, type and default."""
    for f in cli_fields():
        options = dict(f.metadata)
        default = f.default
        if options.get("nargs") and isinstance(default, str):
            default = [default]
        if f.type in ("bool", bool):
            options["action"] = "store_true"
        else:
            options["default"] = default
        if options.get("required"):
            options.pop("default", None)
        parser.add_argument("--" + f.name.replace("_", "-"), **options)


CONFIG_FIELDS = {f.name: f for f in dataclasses.fields(AlbertConfig)}
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


def config_overrides(items) -> dict:
    """`--config key=value` items as AlbertConfig fields of their own types, e.g. ("embedding_size=64",) ->
    {"embedding_size": 64}; UsageError naming the valid keys, a repeated key or a value of the wrong type."""
    overrides = {}
    for item in items:
        key, equals, text = str(item).partition("=")
        key, text = key.strip(), text.strip()
        if not equals or not key or not text:
            raise UsageError(f"--config takes key=value, e.g. --config embedding_size=64; got {item!r}")
        if key not in CONFIG_FIELDS:
            raise UsageError(f"--config {key}: the model config has no such field; valid keys: "
                             f"{', '.join(CONFIG_FIELDS)}")
        if key in overrides:
            raise UsageError(f"--config {key} is given twice; give each key once")
        overrides[key] = _config_value(key, text)
    return overrides


def _config_value(key: str, text: str):
    """`text` as the type of AlbertConfig's field `key` (int, float, bool or str)."""
    kind = CONFIG_FIELDS[key].type
    kind = kind if isinstance(kind, str) else kind.__name__
    example = f"e.g. --config {key}={CONFIG_FIELDS[key].default}"
    if kind == "bool":
        if text.lower() not in _TRUE + _FALSE:
            raise UsageError(f"--config {key}={text}: {key} is true or false, {example.lower()}")
        return text.lower() in _TRUE
    if kind == "int":
        try:
            return int(text)
        except ValueError:
            raise UsageError(f"--config {key}={text}: {key} is a whole number, {example}") from None
    if kind == "float":
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise UsageError(f"--config {key}={text}: {key} is a finite number, {example}")
        return value
    return text


def parsed_config(items) -> dict:
    """--config as given (None, one item or several) parsed into fields: `config_overrides`."""
    return config_overrides(() if items is None else ((items,) if isinstance(items, str) else items))


def canonical_items(overrides: dict) -> tuple[str, ...]:
    """Parsed --config fields written one way, in the config's field order (`key=value`, booleans as true/false),
    so that a run recorded with them resumes however they were typed."""
    shown = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in overrides.items()}
    return tuple(f"{k}={shown[k]}" for k in CONFIG_FIELDS if k in shown)


def canonical_config(items) -> tuple[str, ...]:
    """--config items checked and written one way (`canonical_items` of `parsed_config`)."""
    return canonical_items(parsed_config(items))


def check(s: PretrainingSetup) -> None:
    """Refuse settings that cannot work, naming the flag and a valid choice: the one place a setup is checked."""
    _check_choices(s)
    _check_counts(s)
    _check_numbers(s)
    if not 0 <= s.seed <= SEED_MAX:
        raise UsageError(f"--seed must be in [0, {SEED_MAX}], got {s.seed}")
    if s.warmup is not None and not 0 <= s.warmup <= s.steps:
        raise UsageError(f"--warmup must be in [0, --steps={s.steps}], got {s.warmup}")
    if "vocab_size" in s._overrides and s.corpus != "synthetic":
        raise UsageError("--config vocab_size: with a text corpus the tokenizer decides vocab_size (its number of "
                         "pieces); leave vocab_size out, or use --corpus synthetic")
    model_config = s.model_config()  # the --config fields checked by the config itself
    _check_model_for_data(s, model_config)
    _check_lengths(s, model_config.max_position_embeddings)
    _check_masking_and_betas(s)
    _check_step_memory(s)
    _check_corpus(s)


def _check_choices(s: PretrainingSetup) -> None:
    """Each setting that names one of a list (a preset, a task, an optimizer, ...) names one on it."""
    from .optim import SCHEDULES  # the decays by name (torch: loaded once the flags are read)

    choices = {"--preset": (s.preset, PRESETS), "--task": (s.task, SENTENCE_TASK_NAMES), "--optimizer": (s.optimizer,
               OPTIMIZERS), "--output-bias": (s.output_bias, OUTPUT_BIASES), "--masking": (s.masking,
               MASKINGS), "decay": (s.decay, tuple(SCHEDULES)), "position_init": (s.position_init, POSITION_INITS)}
    for name, (value, known) in choices.items():
        if value not in known:
            raise UsageError(f"{name} must be one of {', '.join(known)}, got {value!r}")
    check_device_name(s.device)
    if s.split_by is not None and s.split_by not in SPLIT_BY:
        raise UsageError(f"--split-by must be one of {', '.join(SPLIT_BY)}, got {s.split_by!r}")


def _check_counts(s: PretrainingSetup) -> None:
    """Steps, sizes and intervals: whole numbers in their ranges."""
    positive = {"--steps": s.steps, "--batch-size": s.batch_size, "--seq-len": s.seq_len,
                "--accumulate": s.accumulate, "--keep": s.keep, "--log-every": s.log_every,
                "--eval-batches": s.eval_batches}
    for name, value in positive.items():
        if value < 1:
            raise UsageError(f"{name} must be >= 1, got {value}")
    for name, value in {"--eval-every": s.eval_every, "--save-every": s.save_every}.items():
        if value < 0:
            raise UsageError(f"{name} must be >= 0 (0 means only at the end), got {value}")
    if s.dupe_factor < 1 or (s.dupe_factor > 1 and s.masking != "static"):
        raise UsageError(f"--dupe-factor {s.dupe_factor} needs --masking static (and must be >= 1)")


def _check_numbers(s: PretrainingSetup) -> None:
    """The optimizer's and the text's real numbers: finite, positive, and within what float32 holds."""
    floats = {"--minutes": s.minutes, "--lr": s.lr, "--clip-norm": s.clip_norm, "--weight-decay": s.weight_decay,
              "--holdout-fraction": s.holdout_fraction, "--short-fraction": s.short_fraction}
    for name, value in floats.items():  # the parser checks most; this is for a setup built in code
        if value is not None and (not math.isfinite(value) or value < 0 or (value == 0 and name != "--weight-decay")):
            raise UsageError(f"{name} must be a finite number {'>=' if name == '--weight-decay' else '>'} 0, "
                             f"got {value}")
    for name, value in {"--lr": s.lr, "--clip-norm": s.clip_norm, "--weight-decay": s.weight_decay}.items():
        if value > FLOAT32_MAX:  # torch turns it into a float32 inside the optimizer step: a RuntimeError there
            raise UsageError(f"{name} {value:g} does not fit in float32, which the optimizer computes in (at most "
                             f"{FLOAT32_MAX:.3g}); give a realistic value, e.g. {name} {_FLAG_DEFAULTS[name]:g}")
    if s.optimizer == "adamw" and s.lr * s.weight_decay >= 1:
        raise UsageError(f"--lr {s.lr:g} x --weight-decay {s.weight_decay:g} = {s.lr * s.weight_decay:g} >= 1: "
                         "AdamW multiplies every weight by (1 - lr x weight-decay) at each step, which would zero or "
                         "flip them all; lower --weight-decay (default 0.01) or --lr")


def _check_lengths(s: PretrainingSetup, longest: int) -> None:
    """--seq-len within the model's positions, and the curriculum's short length and fraction."""
    if not 8 <= s.seq_len <= longest:
        model = f"{s.preset} with --config {' '.join(s.config)}" if s.config else s.preset
        raise UsageError(f"--seq-len must be in [8, {longest}] for {model}, got {s.seq_len}")
    if s.short_seq_len is None:
        return
    if not 8 <= s.short_seq_len < s.seq_len or (s.seq_len % s.short_seq_len and s.short_batch_size is None):
        raise UsageError(f"--short-seq-len must be in [8, --seq-len={s.seq_len}) and divide it, "
                         f"got {s.short_seq_len}; e.g. --short-seq-len {s.seq_len // 2}")
    if not 0 < s.short_fraction < 1:
        raise UsageError(f"--short-fraction must be in (0, 1), got {s.short_fraction}")


def _check_masking_and_betas(s: PretrainingSetup) -> None:
    """The recipe probes' knobs: a masking rate, n-gram length and cap that mask something; Adam's two betas."""
    if not (0 < s.mask_prob < 1 and s.ngram >= 1 and (s.max_predictions or 1) >= 1):
        raise UsageError(f"mask_prob must be in (0, 1), ngram and max_predictions >= 1; got {s.mask_prob}, "
                         f"{s.ngram}, {s.max_predictions}")
    if len(s.betas) != 2 or not all(0 <= b < 1 for b in s.betas):
        raise UsageError(f"betas must be two numbers in [0, 1), got {s.betas}")


def _check_step_memory(s: PretrainingSetup) -> None:
    """One step's token ids fit in memory at once."""
    # The trainer draws a step's micro-batches before computing them (so a time budget can undo a step cut short):
    # their token ids are in memory together, 24 bytes a token (three int64 tensors), before any activation.
    per_micro_batch = max(p.batch_size * p.seq_len for p in s.phases())
    if per_micro_batch * s.accumulate > STEP_TOKENS_MAX:
        raise UsageError(f"--accumulate {s.accumulate} x {per_micro_batch:,} tokens per micro-batch = "
                         f"{per_micro_batch * s.accumulate:,} tokens held at once for one step, more than "
                         f"{STEP_TOKENS_MAX:,} ({STEP_TOKENS_MAX * 24 / 2**30:.1f} GiB of ids); use --accumulate "
                         f"{max(1, STEP_TOKENS_MAX // per_micro_batch)} or less, or more processes (torchrun)")


STEP_TOKENS_MAX = 2**26  # tokens of one step in one process: 64M, 1.5 GiB of ids (the paper's step: 4096 x 512 = 2M)
_FLAG_DEFAULTS = {"--lr": 1.76e-3, "--clip-norm": 1.0, "--weight-decay": 0.01}  # the fields' defaults, for hints


def _check_model_for_data(s: PretrainingSetup, config: AlbertConfig) -> None:
    """Refuse --config values that make a valid model the run's data cannot feed (each would otherwise end in an
    IndexError deep in an embedding, or silently train on a padding id that is not the data's)."""
    if s.corpus == "synthetic" and config.vocab_size <= FIRST_ORDINARY_ID:
        raise UsageError(f"--config vocab_size={config.vocab_size}: ids 0-{FIRST_ORDINARY_ID - 1} are the special "
                         f"tokens ([PAD], [UNK], [CLS], [SEP], [MASK]) and the synthetic corpus draws its words from "
                         f"{FIRST_ORDINARY_ID} up, so vocab_size must be at least {FIRST_ORDINARY_ID + 1}")
    two_segments = s.task != "none" or s.corpus == "synthetic"  # synthetic rows are always `[CLS] a [SEP] b [SEP]`
    if two_segments and config.type_vocab_size < 2:
        why = f"--task {s.task} pairs" if s.task != "none" else "the synthetic corpus has"
        raise UsageError(f"--config type_vocab_size={config.type_vocab_size}: {why} two segments, whose tokens have "
                         "token types 0 and 1, so type_vocab_size must be at least 2 (the default)"
                         + ("; or train with --task none on a text corpus" if s.corpus != "synthetic" else ""))
    if config.pad_token_id != PAD_ID:
        raise UsageError(f"--config pad_token_id={config.pad_token_id}: the data pads with id {PAD_ID} ([PAD]), so "
                         f"the model's pad_token_id must be {PAD_ID}; leave pad_token_id out")


def _check_corpus(s: PretrainingSetup) -> None:
    """Refuse corpus flags that do not go together."""
    if not s.own_text:
        own_text_flags = {"--validation": s.validation, "--holdout-fraction": s.holdout_fraction,
                          "--split-by": s.split_by}
        given = [name for name, value in own_text_flags.items() if value is not None]
        if given:
            verb = "applies" if len(given) == 1 else "apply"
            raise UsageError(f"{' and '.join(given)} {verb} to your own text (--corpus PATH...); --corpus "
                             f"{s.corpus} has its own validation split")
        if s.corpus == "synthetic" and s.tokenizer is not None:
            raise UsageError("--tokenizer has no effect with --corpus synthetic (random token ids); leave it out")
        if s.corpus == "synthetic" and s.short_seq_len is not None:
            raise UsageError("--short-seq-len needs a text corpus; the synthetic corpus has one sequence length")
        return
    if s.tokenizer is None:
        raise UsageError(f"--corpus PATH... needs --tokenizer, a SentencePiece model trained on that text: first "
                         f"`{TRAIN_TOKENIZER}`, then pretrain with --tokenizer tok.model")
    if s.validation and s.holdout_fraction is not None:
        raise UsageError("give either --validation PATH... (held-out files) or --holdout-fraction (held-out "
                         "documents of --corpus), not both")
    if s.holdout_fraction is not None and not 0 < s.holdout_fraction < 1:
        raise UsageError(f"--holdout-fraction must be in (0, 1), e.g. {DEFAULT_HOLDOUT}; got {s.holdout_fraction}")
