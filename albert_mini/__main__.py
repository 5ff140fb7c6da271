"""`python -m albert_mini COMMAND ...`: the `albert-mini` command line (albert_mini/commands/), for a venv's Python or
torchrun (`torchrun --standalone --nproc_per_node 2 -m albert_mini pretrain ...`)."""

import sys

from .commands import main

if __name__ == "__main__":
    sys.exit(main())
