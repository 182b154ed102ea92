"""Where a run's numbers go: TorchRL loggers (CSV or TensorBoard), a progress bar, a learning curve."""

from __future__ import annotations

from pathlib import Path

from torchrl.record.loggers import CSVLogger, Logger

from marlplug.errors import UserError


def make_logger(backend: str, run_dir: Path) -> Logger:
    """A TorchRL logger writing under ``run_dir`` (``csv`` or ``tensorboard``)."""
    if backend == "csv":
        return CSVLogger(exp_name="metrics", log_dir=str(run_dir))
    if backend == "tensorboard":
        try:
            from torchrl.record.loggers import TensorboardLogger

            return TensorboardLogger(exp_name="metrics", log_dir=str(run_dir))
        except ImportError as exc:
            raise UserError(
                "logging.backend: tensorboard needs the tensorboard package "
                "(pip install 'marlplug[tensorboard]'); or use csv"
            ) from exc
    raise UserError(f"logging.backend: unknown backend '{backend}'; available: csv, tensorboard")


def plot_learning_curve(history: list[tuple[int, float]], path: Path, *, title: str) -> Path:
    """Save mean return against environment frames as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 4))
    if history:
        frames, returns = zip(*history, strict=True)
        axes.plot(frames, returns, marker="o", markersize=3)
    axes.set_xlabel("environment frames")
    axes.set_ylabel("mean episode return")
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
