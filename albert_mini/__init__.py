"""albert_mini: ALBERT (Lan et al., ICLR 2020) built to be read, run and pretrained on a laptop CPU.

The package is a house of layers, each importing only those below it:

    book/    building the chapters, checking their exercises, reading them in JupyterLab and as HTML
    study/   the paper's numbers and claims, measured (smoothness, memory, throughput, probes, experiments)
    tasks/   fine-tuning: file formats, model inputs, metrics, task kinds and registry, the loop
    training/ optimizers, the trainer, checkpoints, DDP, the pretraining recipe and CLI
    text/    corpora, the tokenizer, pretraining instances, masking, batches
    model/   config, the ALBERT modules, fine-tuning heads, HF interop, parameter counts
    specials.py, paths.py, settings.py: special ids, where files live, the fast-mode switch
    errors.py, cli.py, textfile.py: user errors, what every command line shares, reading users' text files

The public names below are imported when first used, never by `import albert_mini` itself: a `python -m
albert_mini.X.Y` command must find its module not yet imported, or runpy warns that it runs a second copy.
"""

import importlib

__version__ = "0.1.0"

# The module behind each public name.
_EXPORTS = {
    "model.config": ("AlbertConfig", "ConfigError", "PRESETS"),
    "model.albert": ("AlbertModel", "AlbertForPreTraining"),
    "model.counting": ("count_parameters", "parameter_table", "format_parameter_table"),
    "model.heads": ("AlbertForSequenceClassification", "AlbertForMultipleChoice", "AlbertForQuestionAnswering",
                    "TaskOutput"),
    "text.corpus": ("CorpusError", "Document", "load_corpus", "load_text_files", "split_sentences"),
    "text.tokenizer": ("Tokenizer", "TokenizerError", "preprocess_text"),
    "text.instances": ("build_instances",),
    "text.masking": ("Masker",),
    "text.batches": ("PretrainingBatches", "PretrainingDataset", "build_pretraining_dataset", "collate"),
    "text.synthetic": ("SyntheticBatches",),
    "training.checkpoint": ("CheckpointError", "load_pretrained"),
    "training.optim": ("Lamb", "WarmupPolyDecay", "build_optimizer", "clip_grad_global_norm", "param_groups"),
    "training.trainer": ("TrainConfig", "Trainer", "TrainResult", "evaluate", "train"),
    "tasks.registry": ("TASKS",),
    "tasks.finetune": ("FinetuneSettings", "build_task_model", "run_task"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [*_MODULE_OF, "__version__"]


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
