"""albert_mini: ALBERT (Lan et al., ICLR 2020) built to be read, run and pretrained on a laptop CPU.

The package is a house of layers, each importing only those below it:

    book/    building the chapters, checking their exercises, reading them in JupyterLab and as HTML
    research/ the harness behind the recipe search and the classroom model (recipe probes, controls, card)
    study/   the paper's numbers and claims, measured (smoothness, memory, throughput, probes, experiments)
    tasks/   fine-tuning: file formats, model inputs, metrics, task kinds and registry, the loop
    training/ the one pretraining setup and its builders, optimizers, the trainer, checkpoints, DDP, the CLI
    text/    corpora, the tokenizer, pretraining instances, masking, batches
    model/   config, the ALBERT modules, fine-tuning heads, HF interop, parameter counts
    specials.py, paths.py, settings.py: special ids, where files live, the fast-mode switch
    errors.py, cli.py, textfile.py: user errors, what every command line shares, reading users' text files

`import albert_mini` imports the modules behind the public names below, except the few whose module is a command
line or imports one (the tokenizer, the task registry): those are imported when first used. A `python -m
albert_mini.X.Y` command must find its module not yet imported, or runpy warns that it runs a second copy.
"""

import importlib
from typing import TYPE_CHECKING

from .model.albert import AlbertForPreTraining, AlbertModel
from .model.config import PRESETS, AlbertConfig, ConfigError
from .model.counting import count_parameters, format_parameter_table, parameter_table
from .model.heads import (
    AlbertForMultipleChoice,
    AlbertForQuestionAnswering,
    AlbertForSequenceClassification,
    TaskOutput,
)
from .tasks.finetuning import FinetuneSettings, build_task_model, run_task
from .text.batches import PretrainingBatches, PretrainingDataset, build_pretraining_dataset, collate
from .text.corpus import CorpusError, Document, load_corpus, load_text_files, split_sentences
from .text.instances import build_instances
from .text.masking import Masker
from .text.synthetic import SyntheticBatches
from .training.checkpoint import CheckpointError, load_pretrained
from .training.optim import Lamb, WarmupPolyDecay, build_optimizer, clip_grad_global_norm, param_groups
from .training.trainer import TrainConfig, Trainer, TrainResult, evaluate, train

if TYPE_CHECKING:
    from .tasks.registry import TASKS
    from .text.tokenizer import Tokenizer, TokenizerError, preprocess_text

__version__ = "0.1.0"

# Lazy, and only these: text.tokenizer is a `python -m` command and tasks.registry imports two (runpy would warn).
_LAZY = {
    "text.tokenizer": ("Tokenizer", "TokenizerError", "preprocess_text"),
    "tasks.registry": ("TASKS",),
}
_MODULE_OF = {name: module for module, names in _LAZY.items() for name in names}

__all__ = [
    "AlbertConfig", "ConfigError", "PRESETS",
    "AlbertModel", "AlbertForPreTraining",
    "count_parameters", "parameter_table", "format_parameter_table",
    "AlbertForSequenceClassification", "AlbertForMultipleChoice", "AlbertForQuestionAnswering", "TaskOutput",
    "CorpusError", "Document", "load_corpus", "load_text_files", "split_sentences",
    "Tokenizer", "TokenizerError", "preprocess_text",
    "build_instances",
    "Masker",
    "PretrainingBatches", "PretrainingDataset", "build_pretraining_dataset", "collate",
    "SyntheticBatches",
    "CheckpointError", "load_pretrained",
    "Lamb", "WarmupPolyDecay", "build_optimizer", "clip_grad_global_norm", "param_groups",
    "TrainConfig", "Trainer", "TrainResult", "evaluate", "train",
    "TASKS",
    "FinetuneSettings", "build_task_model", "run_task",
    "__version__",
]


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
