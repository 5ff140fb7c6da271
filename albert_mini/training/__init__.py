"""Training: optimizers and schedule, the trainer and its objective, checkpoints, DDP, the pretraining recipe and CLI."""
