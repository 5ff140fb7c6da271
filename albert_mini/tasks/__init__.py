"""Fine-tuning: task file formats, model inputs, metrics, the shipped tasks, task kinds and registry, the loop."""
