"""Training: optimizers, the trainer and its objective, checkpoints, DDP, the pretraining recipe and its runs."""
