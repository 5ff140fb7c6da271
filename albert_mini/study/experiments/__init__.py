"""The paper's findings at mini scale: one module per experiment, registered by name."""
