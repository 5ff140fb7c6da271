"""The clean version of Table 5 (sentence_scratch) on the fast budget, in a module of its own so that it runs on
one worker while the other families run on the others (fast_results.py)."""

import pytest
from fast_results import check_provenance_and_figure, fast_result


@pytest.mark.slow
def test_result_has_provenance_and_a_figure(tmp_path_factory):
    check_provenance_and_figure("sentence_scratch", fast_result("sentence_scratch", tmp_path_factory))
