"""graphscope's version, in a module of its own: readers and writers stamp it into files, and
importing it from the package's ``__init__`` would tie them to the order ``__init__`` imports in.
"""

__version__ = "0.1.0"
