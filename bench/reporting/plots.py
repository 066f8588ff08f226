"""PNG figures of a report session, drawn with matplotlib (the ``bench`` extra). Without
matplotlib, :func:`draw_plots` draws nothing and says why; the report is written regardless."""

from __future__ import annotations

from pathlib import Path

from ...engine._optional import missing
from .analysis import scaling_exponents, series_from_rows


def plotting_unavailable() -> str | None:
    """Why plots cannot be drawn here, or None."""
    return missing("matplotlib")


def draw_plots(session, curves: dict, out: Path) -> dict[str, str]:
    """Draw every figure the session has data for into ``out``; returns {figure: file name}."""
    if plotting_unavailable():
        return {}
    import matplotlib

    matplotlib.use("Agg")  # files only: never open a window
    from matplotlib import pyplot

    drawn = {}
    figures = {"solver-scaling": lambda ax: _scaling(ax, curves),
               "accuracy-cost": lambda ax: _accuracy(ax, session.accuracy)}
    for result in session.benchmarks:
        series = series_from_rows(result.rows)
        if series:
            figures[f"bench-{result.name}"] = \
                lambda ax, series=series, name=result.name: _series(ax, series, name)
    for name, draw in figures.items():
        figure, axes = pyplot.subplots(figsize=(6.4, 4.4), dpi=110)
        if draw(axes):
            figure.tight_layout()
            figure.savefig(out / f"{name}.png")
            drawn[name] = f"{name}.png"
        pyplot.close(figure)
    return drawn


def _scaling(axes, curves) -> bool:
    if not curves:
        return False
    exponents = scaling_exponents(curves)
    for name, points in curves.items():
        exponent = exponents[name][0]
        label = name if exponent is None else f"{name} (N^{exponent:.2f})"
        axes.loglog([n for n, _ in points], [t * 1e3 for _, t in points], "o-", label=label)
    axes.set_xlabel("particles N")
    axes.set_ylabel("ms per force evaluation (median)")
    axes.set_title("Solver cost against particle count")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    return True


def _accuracy(axes, rows) -> bool:
    if not rows:
        return False
    for solver in dict.fromkeys(r["solver"] for r in rows):
        mine = [r for r in rows if r["solver"] == solver]
        axes.loglog([r["median ms"] for r in mine], [max(r["rms error"], 1e-12) for r in mine],
                    "o-" if len(mine) > 1 else "o", label=solver)
        for r in mine:
            if r["options"] != "defaults":
                axes.annotate(r["options"].replace("quadrupole=", "q="), (r["median ms"], r["rms error"]),
                              fontsize=6, alpha=0.7)
    axes.set_xlabel("ms per force evaluation (median)")
    axes.set_ylabel("rms relative error vs reference")
    axes.set_title(f"Accuracy against cost, N = {rows[0]['N']:,}")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    return True


def _series(axes, series, name) -> bool:
    for label, points in series.items():
        points = sorted(points)
        axes.loglog([n for n, _ in points], [t * 1e3 for _, t in points], "o-", label=label)
    axes.set_xlabel("particles N")
    axes.set_ylabel("ms (median)")
    axes.set_title(f"orrery bench {name}")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=7)
    return True
