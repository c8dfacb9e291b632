"""The typed step timing that report, inspect, diff and the cards read."""

from __future__ import annotations

import math
from pathlib import Path

import networkx as nx
import pytest

import graphscope
from graphscope.analysis.timing import read_eager_summary, read_timing, step_timing

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def test_a_bundles_figures_are_its_numbers() -> None:
    G = graphscope.load(SAMPLES / "bundles" / "tiny-gpt-b1.json.gz")
    step = step_timing(G)
    assert step.timing.eager_step_us == pytest.approx(G.graph["timing"]["eager_step_us"])
    assert step.timing.replay_wall_us == pytest.approx(G.graph["timing"]["replay_wall_us"])
    assert step.eager.gpu_idle_us == pytest.approx(G.graph["eager_summary"]["gpu_idle_us"])
    assert step.figure("eager_summary.step_us") == step.eager.step_us
    assert step.figure("timing.replay_us") == step.timing.replay_us
    assert step.recording.replays is None  # a capture's bundle, not a recording's
    with pytest.raises(KeyError):
        step.figure("timing.no_such_figure")
    with pytest.raises(KeyError):
        step.figure("elsewhere.replay_us")


def test_a_recorded_graph_has_its_recording_figures() -> None:
    path = next((SAMPLES / "recordings").glob("*/*/g*.json.gz"))
    G = graphscope.load(path)
    assert step_timing(G).figure("recording.replays") == G.graph["recording"]["replays"]


def test_what_is_not_a_finite_number_is_absent() -> None:
    odd = {
        "eager_step_us": "12",
        "replay_wall_us": math.nan,
        "replay_us": math.inf,
        "gpu_busy_us": True,
        "cpu_launch_us": 10**400,  # past float's range
        "replays": 200,
    }
    timing = read_timing(odd)
    assert timing.eager_step_us is None and timing.replay_wall_us is None
    assert timing.replay_us is None and timing.gpu_busy_us is None
    assert timing.cpu_launch_us is None and timing.replays == 200.0
    assert read_eager_summary(["not", "a", "dict"]).step_us is None
    assert step_timing(nx.DiGraph()).timing.eager_step_us is None  # a DOT dump has none
