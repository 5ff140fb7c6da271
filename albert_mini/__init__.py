"""albert_mini: ALBERT (Lan et al., ICLR 2020) built to be read, run and pretrained on a laptop CPU."""

from .config import PRESETS, AlbertConfig, ConfigError
from .corpus import CorpusError, Document, load_corpus, load_text_files, split_sentences
from .counting import count_parameters, format_parameter_table, parameter_table
from .instances import build_instances
from .masking import Masker
from .model import AlbertForPreTraining, AlbertModel
from .heads import AlbertForMultipleChoice, AlbertForQuestionAnswering, AlbertForSequenceClassification, TaskOutput
from .pretraining_data import PretrainingBatches, PretrainingDataset, build_pretraining_dataset, collate
from .tokenizer import Tokenizer, TokenizerError, preprocess_text
from .checkpoint import CheckpointError, load_pretrained
from .optim import Lamb, WarmupPolyDecay, build_optimizer, clip_grad_global_norm, param_groups
from .trainer import SyntheticBatches, TrainConfig, Trainer, TrainResult, evaluate, train
from .finetune import TASKS, FinetuneSettings, build_task_model, run_task

__version__ = "0.1.0"

__all__ = [
    "AlbertConfig", "ConfigError", "PRESETS", "AlbertModel", "AlbertForPreTraining", "count_parameters",
    "AlbertForSequenceClassification", "AlbertForMultipleChoice", "AlbertForQuestionAnswering", "TaskOutput",
    "CorpusError", "Document", "load_corpus", "load_text_files", "split_sentences",
    "Tokenizer", "TokenizerError", "preprocess_text", "build_instances", "Masker", "PretrainingBatches",
    "PretrainingDataset", "build_pretraining_dataset", "collate", "CheckpointError", "load_pretrained", "Lamb",
    "WarmupPolyDecay", "build_optimizer", "clip_grad_global_norm", "param_groups", "SyntheticBatches",
    "TrainConfig", "Trainer", "TrainResult", "evaluate", "train", "parameter_table", "format_parameter_table",
    "TASKS", "FinetuneSettings", "build_task_model", "run_task", "__version__",
]
