"""Analyses: pure functions over the graph model that return data, never pictures."""

from .summary import summarize

__all__ = ["summarize"]
