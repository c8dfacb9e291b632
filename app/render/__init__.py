"""Rendering, as functions: a graph, a bundle or an analysis in; Plotly figures and Dash
components out. Nothing here keeps state or knows of callbacks."""
