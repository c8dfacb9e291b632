"""Analyses: pure functions over the graph model that return data, never pictures.

Each module is imported by name (``graphscope.analysis.summary``): the package imports none,
so the recorder's start-up reads only ``analysis.replay``."""
