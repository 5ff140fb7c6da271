"""The fine-tuning API's public path: the names of albert_mini.tasks.finetuning, importable from here.

The fine-tuning itself (the task objective and batches, models from a checkpoint, HF weights or random
initialisation, scoring, `run_task`) is albert_mini.tasks.finetuning; its command line, `albert-mini finetune`,
is albert_mini/commands/finetune.py.
"""

from __future__ import annotations

from .finetuning import (  # the public path of the fine-tuning API
    FinetuneSettings,
    TaskBatches,
    TaskObjective,
    build_task_model,
    evaluate_task,
    in_order,
    predict_logits,
    run_task,
)

# The fine-tuning names that chapters and users import from here.
__all__ = ["FinetuneSettings", "TaskBatches", "TaskObjective", "build_task_model", "evaluate_task", "in_order",
           "predict_logits", "run_task"]
