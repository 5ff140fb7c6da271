"""The fine-tuning loop: task objective in the shared trainer, resumable batches, encoders from checkpoints."""

import pytest
import torch

from albert_mini import AlbertConfig, AlbertForPreTraining, TrainConfig
from albert_mini.tasks.finetuning import TaskBatches, TaskObjective, build_task_model, in_order, predict_logits
from albert_mini.tasks.kinds import accuracy
from albert_mini.training.checkpoint import CheckpointError, export_pretrained, load_pretrained, save_checkpoint
from albert_mini.training.optim import WarmupPolyDecay, build_optimizer
from albert_mini.training.trainer import Trainer, train

NANO = dict(vocab_size=50, embedding_size=8, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
            classifier_dropout_prob=0.0)


def keyword_task(n, seed=0, length=8):
    """Label 1 when token 7 occurs in the sequence: learnable by a tiny model in a few dozen steps."""
    g = torch.Generator().manual_seed(seed)
    features = []
    for _ in range(n):
        ids = torch.randint(10, 50, (length,), generator=g)
        label = int(torch.rand(1, generator=g) < 0.5)
        if label:
            ids[torch.randint(1, length, (1,), generator=g)] = 7
        ids[0] = 2
        features.append((ids, label))
    return features


def collate(rows):
    ids = torch.stack([r[0] for r in rows])
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids),
            "labels": torch.tensor([r[1] for r in rows])}


@pytest.mark.usefixtures("one_thread")  # a nano model steps fastest on one thread (tests/conftest.py)
def test_classification_learns_through_the_shared_trainer():
    torch.manual_seed(0)
    model = build_task_model("classification", config=AlbertConfig(**NANO), seed=0)
    train_set, test_set = keyword_task(512, seed=1), keyword_task(256, seed=2)
    test_batches = in_order(test_set, collate, 64)
    before = accuracy(predict_logits(model, test_batches), [y for _, y in test_set])
    result = train(model, TaskBatches(train_set, collate, 32, seed=0), TrainConfig(max_steps=150, progress=False),
                   optimizer="adamw", lr=3e-3, warmup_steps=10, val_batches=test_batches,
                   objective=TaskObjective("classification"))
    after = accuracy(predict_logits(model, test_batches), [y for _, y in test_set])
    assert after > 0.9 > before + 0.2
    # The trainer's evaluation (objective metrics) agrees with the direct computation.
    assert result.eval["acc"] == pytest.approx(after)
    assert result.train["loss"] < 0.4


def test_objective_sums_count_examples_not_rows():
    """A multiple-choice example with four options counts once in the loss denominator and in accuracy."""
    objective = TaskObjective("multiple_choice")
    batch = {"input_ids": torch.ones(3, 4, 5, dtype=torch.long), "labels": torch.tensor([0, 1, 3])}

    class Out:
        logits = torch.tensor([[5.0, 0, 0, 0], [0, 5.0, 0, 0], [5.0, 0, 0, 0]])
        loss = torch.tensor(0.5)

    loss, stats = objective(Out, batch, {"examples": 6.0})
    assert objective.denominators(batch) == {"examples": 3}
    assert {k: v.item() for k, v in stats.items()} == {"loss": 1.5, "correct": 2.0, "examples": 3.0}
    assert loss.item() == pytest.approx(1.5 / 6.0)
    assert objective.metrics({k: v.item() for k, v in stats.items()}) == {"loss": 0.5, "acc": pytest.approx(2 / 3)}


def test_span_objective_needs_both_positions_right():
    objective = TaskObjective("span")
    assert objective.required == ("input_ids", "start_positions", "end_positions")
    logits = torch.zeros(2, 6, 2)
    logits[0, 1, 0] = logits[0, 3, 1] = 1.0  # row 0 predicts (1, 3)
    logits[1, 2, 0] = logits[1, 2, 1] = 1.0  # row 1 predicts (2, 2)
    batch = {"input_ids": torch.ones(2, 6, dtype=torch.long), "start_positions": torch.tensor([1, 2]),
             "end_positions": torch.tensor([3, 4])}
    from albert_mini.model.heads import TaskOutput
    _, stats = objective(TaskOutput(torch.tensor(1.0), logits), batch, {"examples": 2.0})
    assert stats["correct"].item() == 1.0


def test_task_batches_resume_exactly_and_cover_each_epoch():
    data = list(range(10))
    source = TaskBatches(data, lambda rows: {"input_ids": torch.tensor(rows)}, batch_size=3, seed=4)
    first_epoch = [next(source)["input_ids"].tolist() for _ in range(3)]
    flat = sum(first_epoch, [])
    assert len(set(flat)) == 9  # 3 full batches of distinct items per epoch; the 10th waits
    state = source.state_dict()
    expected = [next(source)["input_ids"].tolist() for _ in range(4)]
    again = TaskBatches(data, lambda rows: {"input_ids": torch.tensor(rows)}, batch_size=3, seed=4)
    again.load_state_dict(state)
    assert [next(again)["input_ids"].tolist() for _ in range(4)] == expected
    assert expected[0] != first_epoch[0]  # a new permutation per epoch
    with pytest.raises(ValueError, match="cannot fill one batch"):
        TaskBatches(data[:2], lambda rows: rows, batch_size=3)


@pytest.mark.usefixtures("one_thread")  # a nano model steps fastest on one thread (tests/conftest.py)
def test_resumed_finetuning_matches_an_uninterrupted_run(tmp_path):
    def run(steps, out_dir, resume=False):
        torch.manual_seed(0)
        model = build_task_model("classification", config=AlbertConfig(**NANO), seed=0)
        opt = build_optimizer(model, "adamw", lr=1e-3)
        trainer = Trainer(model, opt, WarmupPolyDecay(1e-3, 12, 2),
                          TaskBatches(keyword_task(64), collate, 8, seed=1),
                          TrainConfig(max_steps=steps, save_every=4, out_dir=str(out_dir), progress=False),
                          objective=TaskObjective("classification"))
        if resume:
            trainer.resume()
        trainer.train()
        return model

    straight = run(12, tmp_path / "a")
    run(8, tmp_path / "b")
    resumed = run(12, tmp_path / "b", resume=True)
    for (name, p), q in zip(straight.named_parameters(), resumed.parameters()):
        assert torch.equal(p, q), name


@pytest.mark.parametrize("kind", ["classification", "multiple_choice", "span"])
def test_encoder_comes_from_the_checkpoint_and_the_head_is_new(tmp_path, kind):
    config = AlbertConfig(**NANO)
    torch.manual_seed(3)
    pretrained = AlbertForPreTraining(config)
    save_checkpoint(tmp_path / "run", 5, pretrained, {"note": 1})
    shipped = export_pretrained(tmp_path / "run", tmp_path / "shipped")
    assert sorted(p.name for p in shipped.iterdir()) == ["config.json", "manifest.json", "model.safetensors"]
    assert torch.equal(load_pretrained(shipped).albert.pooler.weight, pretrained.albert.pooler.weight)
    a = build_task_model(kind, shipped, seed=0)
    b = build_task_model(kind, None, config=config, seed=0)
    word = "albert.embeddings.word_embeddings.weight"
    assert torch.equal(a.state_dict()[word], pretrained.state_dict()[word])
    assert not torch.equal(b.state_dict()[word], pretrained.state_dict()[word])
    heads = [k for k in a.state_dict() if not k.startswith("albert.")]
    assert heads and all(torch.equal(a.state_dict()[k], b.state_dict()[k]) for k in heads)


def test_bad_sources_are_explained(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        build_task_model("classification", tmp_path / "nowhere")
    with pytest.raises(CheckpointError, match="holds no checkpoint"):
        build_task_model("classification", tmp_path)
    with pytest.raises(ValueError, match="needs a config"):
        build_task_model("span", "random")
    with pytest.raises(ValueError, match="unknown task kind"):
        TaskObjective("regression")


# ------------------------------------------------------------------ whole tasks, tiny budgets
FIXTURES = __import__("pathlib").Path(__file__).parent / "fixtures" / "tasks"


@pytest.mark.parametrize("task", ["austen-mc", "austen-span"])
def test_built_in_tasks_run_end_to_end(task):
    from albert_mini.tasks.finetuning import FinetuneSettings, evaluate_task, run_task
    from albert_mini.tasks.registry import get_task
    from albert_mini.text.tokenizer import Tokenizer

    settings = FinetuneSettings(steps=2, batch_size=4, max_train_examples=8, max_eval_examples=8)
    result = run_task(task, "random", settings, config=AlbertConfig.from_preset("albert-nano"))
    model = result.pop("model")
    assert result["train_examples"] == 8 and len(result["history"]) == 2
    # The reported score is the returned model's on the first 8 test examples, computed again here.
    spec = get_task(task)
    examples = spec.load(spec.splits[-1])[:8]
    again = evaluate_task(model, spec, Tokenizer.default(), examples)
    score_keys = ("exact_match", "f1", "n") if task == "austen-span" else ("accuracy", "n")
    assert {k: result[k] for k in score_keys} == again and again["n"] == 8
    expected = {"austen-mc": "AlbertForMultipleChoice", "austen-span": "AlbertForQuestionAnswering"}[task]
    assert type(model).__name__ == expected


@pytest.mark.parametrize("fmt,train_file", [("squad", "squad.json"), ("race", "race"), ("sst2", "sst2.tsv"),
                                            ("mnli", "mnli.tsv")])
def test_official_format_files_fine_tune_through_the_cli(fmt, train_file, capsys):
    from albert_mini.commands.finetune import main

    path = FIXTURES / train_file
    assert main(["--format", fmt, "--train-file", str(path), "--test-file", str(path), "--init", "random",
                 "--preset", "albert-nano", "--steps", "1", "--batch-size", "1"]) == 0
    printed = capsys.readouterr().out
    assert ('"f1"' if fmt == "squad" else '"accuracy"') in printed


def test_cli_refuses_ambiguous_task_choice():
    from albert_mini.commands.finetune import main

    with pytest.raises(SystemExit):
        main(["--task", "polarity", "--format", "race"])
    with pytest.raises(SystemExit):
        main(["--format", "race"])


def test_span_predictions_over_batches_of_different_lengths():
    """Evaluation batches are padded to their own longest window; the logits still line up row by row."""
    from albert_mini.tasks.finetuning import evaluate_task
    from albert_mini.tasks.registry import get_task
    from albert_mini.text.tokenizer import Tokenizer

    task = get_task("austen-span")
    tokenizer = Tokenizer.default()
    examples = task.load("test")[:6]
    features = task.features(tokenizer, examples)
    torch.manual_seed(0)
    model = build_task_model("span", config=AlbertConfig.from_preset("albert-nano"))
    batches = in_order(features, task.collate, batch_size=2)
    assert len({b["input_ids"].shape[1] for b in batches}) > 1  # the case that matters
    logits = predict_logits(model, batches)
    alone = predict_logits(model, in_order(features[:1], task.collate, batch_size=1))
    T = alone.shape[1]
    assert torch.allclose(logits[0, :T], alone[0], atol=1e-5)
    assert (logits[0, T:] == torch.finfo(logits.dtype).min).all()
    small = evaluate_task(model, task, tokenizer, examples, features, batch_size=2)
    large = evaluate_task(model, task, tokenizer, examples, features, batch_size=64)
    assert small == large
