"""Analyses: pure functions over the graph model that return data, never pictures."""

from .replay import ReplayTiming, replay_timing, summarize_replays
from .summary import summarize

__all__ = ["ReplayTiming", "replay_timing", "summarize", "summarize_replays"]
