"""The chapters' readers of the committed results: verdicts and counts computed from hand-made files."""

import json

import pytest

from albert_mini.study import results
from albert_mini.study.stats import compare_paired, seed_summary, wilson_interval


def variant_file(folder, loss_diffs, mlm_diffs, sop_a=None, sop_b=None):
    """A two-row sharing.json: "E=128 none" against its baseline "E=128 all", with the given seed differences."""
    base_mlm, base_loss = [0.10, 0.11, 0.12], [5.8, 5.81, 5.82]
    versus = {"mlm_acc": seed_summary(mlm_diffs), "mlm_loss": seed_summary(loss_diffs)}
    if sop_a is not None:
        versus["sop"] = compare_paired(sop_a, sop_b)
    rows = {
        "E=128 all": {"E": 128, "sharing": "all", "baseline": "E=128 all", "params": 100,
                      "mlm_acc": seed_summary(base_mlm), "mlm_loss": seed_summary(base_loss),
                      "sop": seed_summary([0.5, 0.5, 0.5]), "sop_constant_seeds": 3},
        "E=128 none": {"E": 128, "sharing": "none", "baseline": "E=128 all", "params": 200,
                       "mlm_acc": seed_summary([b + d for b, d in zip(base_mlm, mlm_diffs)]),
                       "mlm_loss": seed_summary([b + d for b, d in zip(base_loss, loss_diffs)]),
                       "sop": seed_summary([0.6, 0.6, 0.6]), "sop_constant_seeds": 0, "vs_baseline": versus},
    }
    (folder / "sharing.json").write_text(json.dumps({"rows": rows, "meta": {}}))
    return results.variant_table("sharing", folder)


def test_variant_table_pairs_each_row_with_its_baseline_and_marks_constant_heads(tmp_path):
    rows = variant_file(tmp_path, [0.03, -0.02, 0.00], [0.03, -0.02, 0.00])
    (loss,) = results.variant_differences(rows)
    assert (loss.a, loss.b, loss.better) == ("E=128 none", "E=128 all", "lower")
    assert list(loss.values) == pytest.approx([0.03, -0.02, 0.00])
    table = results.variant_markdown(rows)
    assert "| E=128 all | 0.00M | 5.810 ± 0.010 | 11.0 ± 1.0 | constant in 3 of 3 |" in table


def test_row_difference_pairs_two_rows_seed_by_seed(tmp_path):
    rows = [{"model": "a", "per_seed": {"0": {"mlm_loss": 5.0}, "1": {"mlm_loss": 5.2}}},
            {"model": "b", "per_seed": {"0": {"mlm_loss": 5.1}, "1": {"mlm_loss": 5.4}}}]
    d = results.row_difference(rows, "a", "b")
    assert d["values"] == pytest.approx([-0.1, -0.2]) and d["mean"] == pytest.approx(-0.15)


def test_table5_reading_names_each_branch_task_method_and_constant_heads():
    seeds = {"0": {"nsp": 0.70, "sop": 0.50, "wilson": {"nsp": list(wilson_interval(70, 100)),
                                                      "sop": list(wilson_interval(50, 100))},
                   "constant": {"sop": True}}}
    row = {"per_seed": seeds, "method": {"nsp": "linear probe", "sop": "linear probe"}}
    lines = results.table5_reading({"rows": {"sop": row}})
    assert lines == ["sop row on NSP (probe): 70.0%; above chance in 1 of 1 seed(s)",
                     "sop row on SOP (probe): 50.0%; above chance in 0 of 1 seed(s); one answer to every pair in "
                     "1 seed(s)"]


def test_table5_decisions_read_each_go_no_go_step():
    decisions = [{"step": "branch point", "checked_at": 3000, "sop_head": 0.495, "sop_head_wilson": [0.47, 0.52],
                  "sop_probe": 0.501, "sop_probe_wilson": [0.476, 0.526], "decision": "branch from step 3000"},
                 {"step": "seed-0 SOP branch after 1250 short steps", "sop": 0.497, "sop_wilson": [0.472, 0.522],
                  "threshold": 0.55, "decision": "lengthen"}]
    lines = results.table5_decisions({"decisions": decisions})
    assert lines[0] == ("Branch point: at step 3000, SOP head 49.5% [47.0, 52.0], SOP probe 50.1% [47.6, 52.6]: "
                        "branch from step 3000.")
    assert lines[1] == ("Seed-0 SOP branch after 1250 short steps: SOP probe 49.7% [47.2, 52.2] against a "
                        "threshold of 55%: lengthen.")


def test_contrast_lines_read_the_seed_differences():
    contrast = {"a": "sop", "b": "nsp", "task": "sop", "difference": seed_summary([0.10, 0.12, 0.11]),
                "per_seed": {s: {"difference": d} for s, d in zip("012", (0.10, 0.12, 0.11))}}
    line, = results.contrast_lines({"contrasts": {"x": contrast}})
    assert line.startswith("+SOP - +NSP on SOP: seeds +10.0, +12.0, +11.0; mean +11.0 [")
    assert line.endswith("(A ahead)")


def strata(all_right, quote_right, free_right, quote=6, free=4):
    """A stratified() result of hand-made counts: `quote` quote pairs and `free` quote-free pairs."""
    def score(right, n):
        return {"pairs": n, "correct": right, "accuracy": right / n, "wilson": list(wilson_interval(right, n))}
    return {"all": score(all_right, quote + free), "quote": score(quote_right, quote),
            "no_quote": score(free_right, free)}


def test_table5_strata_put_each_model_and_each_no_network_reader_on_the_quote_strata():
    point = {"step": 3000, "strata": {"sop": strata(5, 3, 2), "sop_head": strata(4, 2, 2)}}
    rule = {**strata(7, 5, 2), "decided": 3, "right_when_decided": 3}
    result = {"trunk": {"branch_point": 3000, "points": [point]},
              "baselines": {"sop": {"no_network": {"64": {"majority": strata(6, 4, 2), "quote_state_rule": rule,
                                                          "surface_regression": strata(6, 5, 1)}}}}}
    lines = results.table5_strata(result).splitlines()
    assert lines[0] == "| model (64 tokens, held-out SOP) | scored by | all 10 pairs | quote (6) | quote-free (4) |"
    assert lines[2].startswith("| trunk at step 3000 | probe | 50.0 [") and "| 50.0 [" in lines[2]
    assert lines[3].startswith("| trunk at step 3000 | own head | 40.0 [")
    assert "quote-state rule (answers 3 pairs, 3 right)" in lines[5] and "| 83.3 [" in lines[5]
    assert len(lines) == 2 + 2 + 3  # header, two scores of one model, three readers


def test_table5_strata_lines_give_every_seed_on_every_stratum_with_its_pair_count():
    seeds = {"0": {"strata": {"sop": strata(5, 3, 2)}}, "1": {"strata": {"sop": strata(6, 6, 0)}}}
    lines = results.table5_strata_lines({"rows": {"nsp": {"per_seed": seeds}}})
    assert lines == ["nsp row on SOP (probe), seeds 0, 1: all pairs 50.0, 60.0% of 10; quote 50.0, 100.0% of 6; "
                     "quote-free 50.0, 0.0% of 4"]


def test_table5_glance_gives_each_task_its_own_no_network_reader():
    point = {"step": 3000, "mlm_acc": 0.3, "sop_head": 0.5, "sop": 0.5, "nsp": 0.5,
             "sop_head_wilson": [0.4, 0.6], "sop_wilson": [0.4, 0.6]}
    base = {t: {"majority": 0.51, "overlap_stump": 0.47 if t == "sop" else 0.60} for t in ("sop", "nsp")}
    result = {"trunk": {"branch_point": 3000, "points": [point]}, "baselines": base}
    assert results.table5_glance(result).endswith("| no network (majority or word overlap) | - | 51.0 | 51.0 | 60.0 |")
    base["sop"]["no_network"] = {"64": {"majority": strata(5, 3, 2), "surface_regression": strata(6, 4, 2)}}
    base["nsp"]["no_network"] = {"64": {"majority": strata(5, 3, 2), "topic_regression": strata(7, 4, 3)}}
    last = results.table5_glance(result).splitlines()[-2:]
    assert last == ["| no network: majority label | - | 50.0 | 50.0 | 50.0 |",
                    "| no network: surface features (SOP), topic features (NSP) | - | 60.0 | 60.0 | 70.0 |"]


def test_smoothness_reading_adds_up_the_layer_to_layer_changes():
    curve = {"trained": {"degrees": {"mean": [10.0, 8.0, 9.0, 5.0]}, "l2": {"mean": [1.0, 0.5, 0.5, 0.75]}}}
    reading = results.smoothness_reading({"m": curve})["m"]
    # degrees: 2 + 1 + 4 = 7 of change, 5 of it net; l2: 0.5 + 0 + 0.25 = 0.75 of change, 0.25 net
    assert reading["degrees_wobble"] == pytest.approx(2) and reading["l2_wobble"] == pytest.approx(0.5)
    assert results.wobble([9.0, 7.0, 4.0, 1.0]) == 0  # a steady fall does not wobble
    assert reading["largest_rise"] == pytest.approx(1.0) and not reading["falls_every_layer"]
    assert (reading["first"], reading["last"]) == (10.0, 5.0)
    assert (reading["seeds"], reading["seeds_falling_every_layer"]) == (1, 0)
    curve["trained"]["degrees"]["values"] = [[3.0, 2.0, 1.0, 0.5], [10.0, 8.0, 9.0, 5.0]]
    reading = results.smoothness_reading({"m": curve})["m"]
    assert (reading["seeds"], reading["seeds_falling_every_layer"]) == (2, 1)


def test_finetune_rows_take_intervals_over_seeds(tmp_path):
    pretrained, random = [0.69, 0.69, 0.675], [0.50, 0.692, 0.67]
    diffs = [a - b for a, b in zip(pretrained, random)]
    row = {"pretrained": {"accuracy": seed_summary(pretrained), "settings": {"steps": 1, "batch_size": 1},
                          "epochs": 1.0, "n": 400},
           "random": {"accuracy": seed_summary(random)},
           "pretrained_vs_random": {"accuracy": seed_summary(diffs), "mcnemar_per_seed": [1e-4, 0.9, 0.8]}}
    result = {"rows": {"polarity": row}, "baselines": {"polarity": {"accuracy": 0.76}}, "chance": {}}
    (tmp_path / "finetune.json").write_text(json.dumps(result))
    got, = results.finetune_rows(tmp_path)
    assert got["per_seed"] == pytest.approx(diffs) and got["test"] == "t interval over seeds"
    assert got["verdict"] == "no clear difference"  # one seed's failure is not an effect
