"""Training: optimizers, the trainer and its objective, checkpoints, DDP, the pretraining setup, model and runs."""
