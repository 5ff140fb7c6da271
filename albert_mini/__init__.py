"""albert_mini: ALBERT (Lan et al., ICLR 2020) built to be read, run and pretrained on a laptop CPU.

The package has three wings (albert_mini/README.md), each a house of layers importing only those below it:

    the commands: commands/, the `albert-mini` command line, one thin module per subcommand
    the harness:  harness/, the project's own experiments, research probes and data builders
    the library, what a learner reads and an engineer builds on:
      book/      building the chapters, checking their exercises, reading them in JupyterLab and as HTML
      study/     the paper's numbers and claims, measured (smoothness, memory, throughput, probes, results)
      tasks/     fine-tuning: file formats, model inputs, metrics, task kinds and registry, the loop
      training/  the one pretraining setup, the pretraining model, optimizers, the trainer, checkpoints, DDP
      text/      corpora, the tokenizer, the token cache, pretraining instances, masking, batches
      model/     config, the ALBERT modules, fine-tuning heads, HF interop, parameter counts
      specials.py, paths.py, settings.py, devices.py: special ids, where files live, fast mode, devices
      errors.py, cli.py, textfile.py, safe_files.py, parent_watch.py: user errors, shared flags, reading and
                 writing files, a child process that ends with its parent

The library never imports the harness or the commands. `pip install albert-mini` installs the library without
book/, and the commands; book/ and harness/ work on a checkout's chapters/ and data/ and ship with it alone.

`import albert_mini` imports the modules behind the public names below (never the command line: `albert-mini
COMMAND` and `python -m albert_mini COMMAND` import a command's module when it runs, and none of the public ones).
"""

# First, before anything loads torch (seconds): in the command line, Ctrl-C while it starts is one line and exit
# status 130 (cli.hold_interrupts), not a traceback.
from . import cli

# The one place the version is written: pyproject.toml reads it from here (a dynamic version), and
# `albert-mini --version` prints it without loading torch.
__version__ = "0.1.0"

# isort: split
if cli.launched_as_command():
    # The command line takes what it runs from the modules themselves, so `albert-mini --help`, `--version` and
    # `env` answer without torch (3 s of imports). A public name is only for programs that import the package.
    def __getattr__(name: str):
        if name in __all__:
            raise AttributeError(f"albert_mini.{name} is not imported in the albert-mini command line; a command "
                                 "imports it from its module")
        raise AttributeError(f"module 'albert_mini' has no attribute {name!r}")
else:  # a notebook, a test, a script: every public name at once, as `import albert_mini` promises
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
    from .tasks.registry import TASKS
    from .text.batches import PretrainingBatches, PretrainingDataset, build_pretraining_dataset, collate
    from .text.corpus import CorpusError, Document, load_corpus, load_text_files, split_sentences
    from .text.instances import build_instances
    from .text.masking import Masker
    from .text.synthetic import SyntheticBatches
    from .text.tokenizer import Tokenizer, TokenizerError, preprocess_text
    from .training.checkpoint import CheckpointError, load_pretrained
    from .training.optim import Lamb, WarmupPolyDecay, build_optimizer, clip_grad_global_norm, param_groups
    from .training.trainer import TrainConfig, Trainer, TrainResult, evaluate, train

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

