"""What a run shows while it trains: a tqdm bar on a terminal or in a Jupyter kernel (rank 0), and with `echo`
one line per metric line. Never under CI (CI=true) or `make book` (static output)."""

from __future__ import annotations

import os
import sys

from tqdm.auto import tqdm

from ...settings import static_output


def _ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def _in_kernel() -> bool:
    """Whether this runs in a Jupyter kernel, where tqdm.auto draws a widget bar (stderr is no terminal there)."""
    shell = sys.modules.get("IPython")
    ip = shell.get_ipython() if shell is not None and hasattr(shell, "get_ipython") else None
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


class Console:
    """The progress bar and the echoed lines."""

    def __init__(self):
        self.bar = None

    def on_start(self, trainer, control) -> None:
        cfg = trainer.config
        show = (cfg.progress and trainer.dist.is_main and (sys.stderr.isatty() or _in_kernel()) and not _ci()
                and not static_output())
        self.bar = tqdm(total=cfg.max_steps, initial=trainer.step, desc=trainer.objective.name, dynamic_ncols=True,
                        disable=not show)

    def on_step_end(self, trainer, control) -> None:
        self.bar.update(1)

    def on_log(self, trainer, metrics: dict) -> None:
        if self.bar is not None and metrics["type"] == "train":
            fields = {shown: metrics.get(key) for key, shown in trainer.objective.progress.items()}
            fields["tok/s"] = round(metrics["tokens_per_s"])
            self.bar.set_postfix({k: f"{v:.3f}" if isinstance(v, float) else v for k, v in fields.items()
                                  if v is not None}, refresh=False)
        if not (trainer.config.echo and trainer.dist.is_main) or _ci():
            return
        shown = " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in metrics.items())
        if self.bar is not None and not self.bar.disable:
            tqdm.write(shown)
        else:
            print(shown, flush=True)

    def on_close(self, trainer) -> None:
        if self.bar is not None:
            self.bar.close()
