"""Every name -> entry registry answers an unknown name the same way: one UnknownNameError listing the known names."""

import pytest

from albert_mini.errors import UnknownNameError, UsageError, UserError
from albert_mini.harness.experiments import EXPERIMENTS, run
from albert_mini.model.config import PRESETS, AlbertConfig, strategy_named
from albert_mini.model.sharing import STRATEGIES
from albert_mini.tasks.formats import GLUE_FORMATS, load_glue_tsv
from albert_mini.tasks.kinds import TASK_KINDS, task_kind
from albert_mini.tasks.registry import FILE_FORMATS, TASKS, file_task, get_task
from albert_mini.text.instances import SENTENCE_TASKS, sentence_task

LOOKUPS = {
    "preset": (PRESETS, AlbertConfig.from_preset),
    "sharing": (STRATEGIES, strategy_named),
    "task": (SENTENCE_TASKS, sentence_task),
    "task kind": (TASK_KINDS, task_kind),
    "shipped task": (TASKS, get_task),
    "format": (FILE_FORMATS, lambda name: file_task(name, "train.json", "test.json")),
    "GLUE task": (GLUE_FORMATS, lambda name: load_glue_tsv("x.tsv", name)),
    "experiment": (EXPERIMENTS, run),
}


@pytest.mark.parametrize("what", LOOKUPS)
def test_an_unknown_name_is_one_user_error_naming_the_known_ones(what):
    registry, find = LOOKUPS[what]
    with pytest.raises(UnknownNameError) as error:
        find("no-such-name")
    assert isinstance(error.value, UserError) and isinstance(error.value, UsageError)
    assert isinstance(error.value, ValueError)  # what callers that catch bad values already catch
    assert str(error.value) == f"unknown {what.removeprefix('shipped ')} 'no-such-name'; choose one of " \
        + ", ".join(registry)
