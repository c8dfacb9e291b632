"""The files the dashboard may show: named on the command line, the samples, uploads."""
