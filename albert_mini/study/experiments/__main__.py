"""`python -m albert_mini.study.experiments NAME|all|tables`: run experiments and write their results."""

import sys

from .common import main

sys.exit(main())
