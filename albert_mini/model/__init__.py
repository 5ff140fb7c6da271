"""The network: config and presets, the ALBERT modules, fine-tuning heads, HF weight interop, parameter counts."""
