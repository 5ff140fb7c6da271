"""A pretraining command resolves its setup once: from the command line on, one model config is built from the
preset, the --config items are parsed once, and an --out that holds a run is listed once (under the run's lock)."""

import albert_mini.training.setup as setup_py
from albert_mini.commands import main
from albert_mini.model.config import AlbertConfig
from albert_mini.training import rundir


def test_the_command_builds_one_config_parses_config_once_and_lists_out_once(monkeypatch, tmp_path):
    calls = {"from_preset": 0, "config_overrides": 0, "check_run_dir": 0}

    def counted(owner, name, wrapped):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return wrapped(*args, **kwargs)
        monkeypatch.setattr(owner, name, wrapper)

    out = tmp_path / "run"
    command = ["pretrain", "--preset", "albert-nano", "--config", "num_hidden_layers=2", "--steps", "2", "--seq-len",
               "64", "--batch-size", "4", "--eval-batches", "1", "--quiet", "--out", str(out)]
    main(command)  # the run; the same command again below finds it (finished: it trains nothing more)
    metrics = (out / "metrics.jsonl").read_bytes()
    counted(AlbertConfig, "from_preset", AlbertConfig.from_preset)
    counted(setup_py, "config_overrides", setup_py.config_overrides)
    counted(rundir, "check_run_dir", rundir.check_run_dir)
    main(command)
    assert (out / "metrics.jsonl").read_bytes() == metrics  # resumed a finished run: nothing appended
    assert calls == {"from_preset": 1, "config_overrides": 1, "check_run_dir": 1}
