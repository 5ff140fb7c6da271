"""Fine-tuning heads on top of `AlbertModel`: sequence classification, multiple choice and span extraction.

Module names, shapes and losses follow Hugging Face's `AlbertForSequenceClassification`,
`AlbertForMultipleChoice` and `AlbertForQuestionAnswering`, so `albert_mini.model.hf.from_hf` / `to_hf` move their
weights both ways and the outputs agree to float precision (tests/model/test_heads.py).

Differs from the reference code (`classifier_utils.py` in google-research/albert), which initialises the output
weights with a truncated normal: here (as in HF) every head starts from Normal(0, initializer_range), zero bias.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .albert import AlbertModel, AlbertPreTrainedModel
from .config import AlbertConfig


@dataclass
class TaskOutput:
    """Loss (when targets were given) and logits of a fine-tuning head."""

    loss: torch.Tensor | None
    logits: torch.Tensor  # (B, num_labels) or (B, num_choices); (B, T, 2) start/end for span extraction
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None

    @property
    def start_logits(self) -> torch.Tensor:
        """Span extraction: the score of each position as the answer's first token, (B, T)."""
        return self.logits[..., 0]

    @property
    def end_logits(self) -> torch.Tensor:
        """Span extraction: the score of each position as the answer's last token, (B, T)."""
        return self.logits[..., 1]


def check_labelled(input_ids: torch.Tensor, labels) -> None:
    """ValueError for targets given with a batch of no example: their mean loss would be 0 / 0, NaN."""
    if labels is not None and input_ids.shape[0] == 0:
        raise ValueError(f"input_ids of shape {tuple(input_ids.shape)} hold no example, so the loss of the labels "
                         "given with them would be NaN; give at least one example")


def _classification_loss(logits: torch.Tensor, labels: torch.Tensor, num_labels: int) -> torch.Tensor:
    """HF's rule: one output is regression (MSE), integer labels are single-label, float labels multi-label."""
    if num_labels == 1:
        return F.mse_loss(logits.view(-1), labels.view(-1).to(logits.dtype))
    if not labels.is_floating_point():
        return F.cross_entropy(logits.view(-1, num_labels), labels.view(-1))
    return F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))


class AlbertForSequenceClassification(AlbertPreTrainedModel):
    """Pooled [CLS] output -> dropout -> Linear(H, num_labels): GLUE-style single texts and pairs."""

    def __init__(self, config: AlbertConfig, num_labels: int = 2):
        super().__init__(config)
        if num_labels < 1:
            raise ValueError(f"num_labels must be >= 1 (1 means regression), got {num_labels}")
        self.num_labels = num_labels
        self.albert = AlbertModel(config)
        self.dropout = nn.Dropout(config.classifier_dropout_prob)
        self.classifier = nn.Linear(config.hidden_size, num_labels)
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None, labels=None,
                output_hidden_states: bool = False, output_attentions: bool = False) -> TaskOutput:
        check_labelled(input_ids, labels)
        out = self.albert(input_ids, attention_mask, token_type_ids, position_ids, output_hidden_states,
                          output_attentions)
        logits = self.classifier(self.dropout(out.pooler_output))  # (B, num_labels)
        loss = None if labels is None else _classification_loss(logits, labels, self.num_labels)
        return TaskOutput(loss, logits, out.hidden_states, out.attentions)


class AlbertForMultipleChoice(AlbertPreTrainedModel):
    """Each (passage, question + option) row is scored by Linear(H, 1) on its pooled output; softmax over options."""

    def __init__(self, config: AlbertConfig):
        super().__init__(config)
        self.albert = AlbertModel(config)
        self.dropout = nn.Dropout(config.classifier_dropout_prob)
        self.classifier = nn.Linear(config.hidden_size, 1)
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None, labels=None,
                output_hidden_states: bool = False, output_attentions: bool = False) -> TaskOutput:
        if input_ids.dim() != 3:
            raise ValueError(f"multiple choice takes input_ids of shape (batch, choices, length), got "
                             f"{tuple(input_ids.shape)}")
        B, C, T = input_ids.shape
        check_labelled(input_ids, labels)
        for name, x in (("attention_mask", attention_mask), ("token_type_ids", token_type_ids),
                        ("position_ids", position_ids)):
            if x is not None and tuple(x.shape) != (B, C, T):  # reshaped below, a wrong one would fail obscurely
                raise ValueError(f"multiple choice takes {name} of the shape of input_ids, {(B, C, T)}, got "
                                 f"{tuple(x.shape)}")

        def rows(x):  # (B, C, T) -> (B * C, T): every option is an ordinary sequence
            return None if x is None else x.reshape(B * C, T)

        out = self.albert(rows(input_ids), rows(attention_mask), rows(token_type_ids), rows(position_ids),
                          output_hidden_states, output_attentions)
        logits = self.classifier(self.dropout(out.pooler_output)).view(B, C)  # (B * C, 1) -> (B, C)
        loss = None if labels is None else F.cross_entropy(logits, labels.view(-1))
        return TaskOutput(loss, logits, out.hidden_states, out.attentions)


class AlbertForQuestionAnswering(AlbertPreTrainedModel):
    """Linear(H, 2) on every token gives start and end scores (SQuAD v1); no pooler, as in HF."""

    def __init__(self, config: AlbertConfig):
        super().__init__(config)
        self.num_labels = 2
        self.albert = AlbertModel(config, add_pooling_layer=False)
        self.qa_outputs = nn.Linear(config.hidden_size, 2)
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                start_positions=None, end_positions=None,
                output_hidden_states: bool = False, output_attentions: bool = False) -> TaskOutput:
        check_labelled(input_ids, start_positions)
        out = self.albert(input_ids, attention_mask, token_type_ids, position_ids, output_hidden_states,
                          output_attentions)
        logits = self.qa_outputs(out.last_hidden_state)  # (B, T, 2): start and end score per token
        loss = None
        if start_positions is not None and end_positions is not None:
            T = logits.shape[1]
            # As HF does: a position beyond the sequence is ignored rather than an error.
            starts = start_positions.view(-1).clamp(0, T)
            ends = end_positions.view(-1).clamp(0, T)
            loss = (F.cross_entropy(logits[..., 0], starts, ignore_index=T)
                    + F.cross_entropy(logits[..., 1], ends, ignore_index=T)) / 2
        return TaskOutput(loss, logits, out.hidden_states, out.attentions)
