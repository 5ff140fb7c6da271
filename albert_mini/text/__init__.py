"""From raw text to model-ready batches: corpora, the tokenizer, pretraining instances, masking, batching."""
