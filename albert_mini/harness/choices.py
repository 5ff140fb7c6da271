"""What the harness's command lines name in their --help, in a module that imports neither torch nor numpy.

`albert-mini help experiments` and `help numerics` build their parsers from these without loading the experiments
(seconds of torch); harness.experiments and its modules import them from here, so each is written once.
"""

from __future__ import annotations

from ..paths import REPO_ROOT

# The experiments by name, each the module of that name in harness/experiments/; `all` runs them in this order
# (except harness.experiments.OPT_IN).
EXPERIMENT_NAMES = ("sentence_task", "sharing", "embedding_size", "smoothness", "throughput", "memory", "finetune",
                    "sentence_scratch", "sop_levers", "sop_escape", "sop_supervised",
                    "sop_language")
SEEDS = (0, 1, 2)  # every model of every experiment is trained once per seed
GUARD_FILE = REPO_ROOT / "tests" / "study" / "numerics_guard.json"  # the numerics guard's recorded values
