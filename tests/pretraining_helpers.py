"""Shared, cached inputs of the pretraining-data tests: the Austen training split, tokenized once per session."""

from __future__ import annotations

import functools

from albert_mini.text.batches import tokenize_documents
from albert_mini.text.corpus import load_corpus
from albert_mini.text.instances import TokenDocuments
from albert_mini.text.tokenizer import Tokenizer


@functools.cache
def tokenizer() -> Tokenizer:
    """The committed 8000-piece Austen SentencePiece model."""
    return Tokenizer.default()


@functools.cache
def austen_documents():
    """The Austen training chapters (corpus Documents)."""
    return load_corpus("austen", "train")


@functools.cache
def austen_token_documents() -> TokenDocuments:
    """The training chapters as token ids (about 0.7M tokens, 27k sentences)."""
    return tokenize_documents(austen_documents(), tokenizer())


@functools.cache
def austen_token_documents_head(n: int = 40) -> TokenDocuments:
    """The first n training chapters as token ids: for tests that walk through whole epochs."""
    return tokenize_documents(austen_documents()[:n], tokenizer())
