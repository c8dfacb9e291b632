"""The one C part of graphscope, optional: everything else is in pyproject.toml.

``graphscope.capture._labeller`` labels the nodes a recorded capture creates (see
capture/_labeller.c). Where no C compiler or Python headers are found, the install goes on
without it and labelling runs in Python, slower (docs/RECORD.md gives both costs).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "graphscope.capture._labeller",
            sources=["capture/_labeller.c"],
            optional=True,
        )
    ]
)
