"""The fine-tuning result's assembly: a head that answers one label is found from its correctness and not tested."""

from albert_mini.tasks.registry import get_task
from albert_mini.tasks.scoring import answers, constant_head


def test_answers_recover_the_labels_a_binary_classifier_gave(polarity_data):
    task = get_task("polarity")
    labels = [e.label for e in task.load(task.splits[-1])[:8]]
    always_one = "".join("1" if y == 1 else "0" for y in labels)  # right exactly where the label is 1
    assert answers("polarity", always_one, 8) == [1] and constant_head({"answers": answers("polarity", always_one, 8)})
    assert answers("polarity", "1" * 8, 8) == sorted(set(labels))  # every answer right: the labels themselves


def test_answers_are_unknown_where_correctness_cannot_tell():
    assert answers("austen-span", None, None) is None  # spans: scored by EM/F1, no per-example bits
    assert answers("austen-mc", "1010", 4) is None  # four options: a wrong answer could be any of three


def test_the_committed_file_tests_no_constant_head():
    from albert_mini.study import results

    row = results.load("finetune")["rows"]["polarity"]
    constant = [a is not None and len(a) == 1 for a in row["random"]["answers"]]
    for p_value, flat in zip(row["pretrained_vs_random"]["mcnemar_per_seed"], constant):
        assert (p_value is None) == flat
    assert "seed" not in row["pretrained"]["settings"] and row["pretrained"]["seeds"] == [0, 1, 2]
