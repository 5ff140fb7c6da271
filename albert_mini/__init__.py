"""albert_mini: ALBERT (Lan et al., ICLR 2020) built to be read, run and pretrained on a laptop CPU."""

import importlib

__version__ = "0.1.0"

# The module behind each public name. A module is imported when one of its names is first used, never by
# `import albert_mini` itself: `python -m albert_mini.finetune` (or .tokenizer, .pretrain, ...) must find its
# module not yet imported, or runpy warns that it runs a second copy of it.
_EXPORTS = {
    "config": ("AlbertConfig", "ConfigError", "PRESETS"),
    "model": ("AlbertModel", "AlbertForPreTraining"),
    "counting": ("count_parameters", "parameter_table", "format_parameter_table"),
    "heads": ("AlbertForSequenceClassification", "AlbertForMultipleChoice", "AlbertForQuestionAnswering",
              "TaskOutput"),
    "corpus": ("CorpusError", "Document", "load_corpus", "load_text_files", "split_sentences"),
    "tokenizer": ("Tokenizer", "TokenizerError", "preprocess_text"),
    "instances": ("build_instances",),
    "masking": ("Masker",),
    "pretraining_data": ("PretrainingBatches", "PretrainingDataset", "build_pretraining_dataset", "collate"),
    "checkpoint": ("CheckpointError", "load_pretrained"),
    "optim": ("Lamb", "WarmupPolyDecay", "build_optimizer", "clip_grad_global_norm", "param_groups"),
    "trainer": ("SyntheticBatches", "TrainConfig", "Trainer", "TrainResult", "evaluate", "train"),
    "finetune": ("TASKS", "FinetuneSettings", "build_task_model", "run_task"),
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
