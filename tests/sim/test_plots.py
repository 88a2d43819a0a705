"""An experiment's plots as a reader sees them (issue 18): axes, ticks, titles and
legends in words and units, not the experiment file's keys (``mix.best_effort``) or
the metrics' (``makespanBestEffort``); and no legend over a plotted point.

Each kind of plot is drawn from a small real run, then measured where matplotlib
put everything (display coordinates, after a draw)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.transforms import Bbox

from leasehold.api.scenario import ConfigSpec
from leasehold_emulator.sim.experiment import (
    METRICS,
    ExperimentSpec,
    MixSpec,
    WorkloadSpec,
    read_results,
    run,
    validate_experiment,
)
from leasehold_emulator.sim.experiment_report import (
    PARAMETERS,
    gantt_figure,
    metric_figure,
    over_time_figure,
)

BASE: dict[str, Any] = {
    "name": "tiny",
    "workload": {"model": "lublin99", "preset": "papers", "jobs": 120},
    "cluster": {"pools": [{"name": "rp", "nodes": 32, "exclusive": True}]},
    # the reproductions' seven: a legend of seven inside the axes covered points
    "policies": ["nop", "mlip", "mov", "moml", "kueue", "kube-scheduler", "haizea"],
    "replications": 2,
    "baseline": "nop",
}
#: one numeric parameter: a line per policy; two parameters: bars per grid point
GRIDS = {"lines": {"mix.best_effort": [0.1, 0.2, 0.3, 0.4, 0.5]},
         "bars": {"mix.best_effort": [0.1, 0.5], "config.backfilling": ["easy", "conservative"]}}

Run = tuple[ExperimentSpec, list[dict[str, Any]]]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    out = {}
    for kind, grid in GRIDS.items():
        spec = validate_experiment({**BASE, "grid": grid})
        where = tmp_path_factory.mktemp(kind)
        run(spec, where, processes=1)
        out[kind] = (spec, read_results(where))
    return out


#: plot kind -> (grid, how it is drawn)
PLOTS: dict[str, tuple[str, Callable[[ExperimentSpec, list[dict[str, Any]]], Figure]]] = {
    **{f"{metric}-lines": ("lines", lambda s, r, m=metric: metric_figure(s, r, m))
       for metric in ("utilization", "makespanBestEffort", "overheadSeconds")},
    **{f"{metric}-bars": ("bars", lambda s, r, m=metric: metric_figure(s, r, m))
       for metric in ("utilization", "meanWaitSeconds")},
    "gantt": ("lines", lambda s, r: gantt_figure(s)),
    "over-time": ("lines", lambda s, r: over_time_figure(s)),
}


@pytest.fixture(params=list(PLOTS))
def drawn(request: pytest.FixtureRequest, runs: dict[str, Run]) -> Iterator[Figure]:
    grid, draw = PLOTS[request.param]
    fig = draw(*runs[grid])
    fig.canvas.draw()  # where everything goes is known after a draw
    yield fig
    plt.close(fig)


def texts(fig: Figure) -> list[str]:
    """Every word a reader sees: titles, axis labels, tick labels, legend entries."""
    out = [t.get_text() for t in fig.texts]  # a suptitle is one of them
    for ax in fig.axes:
        out += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
        out += [t.get_text() for t in [*ax.get_xticklabels(), *ax.get_yticklabels()]]
    for legend in legends(fig):
        out += [t.get_text() for t in legend.get_texts()]
        out.append(legend.get_title().get_text())
    return [t for t in out if t]


def legends(fig: Figure) -> list[Legend]:
    return [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]


#: what is the experiment file's or the code's, not a reader's: a section.field key,
#: a snake_case field, a metric's camelCase name
INTERNAL = re.compile(r"\b(workload|mix|config)\.\w+|\w_\w|\b("
                      + "|".join(m for m in METRICS if m != m.lower()) + r")\b")


def test_every_text_is_in_words(drawn: Figure):
    shown = texts(drawn)
    assert shown, "nothing is labelled"
    assert not [t for t in shown if INTERNAL.search(t)], shown


def points(ax: Axes) -> np.ndarray:
    """Every plotted point of ``ax`` (lines, error bars, step series), in display
    coordinates."""
    parts = [line.get_transform().transform(line.get_xydata()) for line in ax.get_lines()]
    for collection in ax.collections:
        if isinstance(collection, LineCollection):
            for segment in collection.get_segments():
                if len(segment):
                    parts.append(collection.get_transform().transform(segment))
    xy = np.concatenate(parts) if parts else np.empty((0, 2))
    return xy[np.isfinite(xy).all(axis=1)]


def covered(box: Bbox, ax: Axes, fig: Figure) -> list[str]:
    """What of ``ax``'s data lies under ``box``."""
    inside = [f"point {x:.0f},{y:.0f}" for x, y in points(ax)
              if box.x0 < x < box.x1 and box.y0 < y < box.y1]
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    for patch in ax.patches:
        extent = patch.get_window_extent(renderer)
        if extent.width * extent.height > 0 and extent.overlaps(box):
            inside.append(f"bar {extent.bounds}")
    return inside


def test_no_legend_covers_a_plotted_point(drawn: Figure):
    found = legends(drawn)
    if len(drawn.axes[0].get_lines()) + len(drawn.axes[0].patches) > 0 and not found:
        pytest.fail("no legend: the reader cannot tell the policies (or colours) apart")
    renderer = drawn.canvas.get_renderer()  # type: ignore[attr-defined]
    for legend in found:
        box = legend.get_window_extent(renderer)
        for ax in drawn.axes:
            assert not covered(box, ax, drawn), (box.bounds, covered(box, ax, drawn)[:5])


def test_a_numeric_parameter_is_the_x_axis_in_its_unit(runs: dict[str, Run]):
    spec, rows = runs["lines"]
    fig = metric_figure(spec, rows, "utilization")
    try:
        ax = fig.axes[0]
        assert ax.get_xlabel() == "best-effort share of external leases (%)"
        assert sorted({round(x, 6) for line in ax.get_lines() for x in line.get_xdata()}) \
            == [10, 20, 30, 40, 50]
        assert ax.get_ylabel() == "utilization (%)"
    finally:
        plt.close(fig)


def fields() -> Iterator[str]:
    for section, model in (("workload", WorkloadSpec), ("mix", MixSpec),
                           ("config", ConfigSpec)):
        for name, info in model.model_fields.items():
            yield f"{section}.{info.alias or name}"


@pytest.mark.parametrize("key", list(fields()))
def test_every_grid_parameter_has_a_name_for_readers(key: str):
    """A grid may sweep any field of workload, mix or config: each has words."""
    name, scale, unit = PARAMETERS[key]
    assert name and not INTERNAL.search(name) and math.isfinite(scale)
    assert unit == "" or unit.startswith(" ") or unit == "%"

