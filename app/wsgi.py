"""For a WSGI server: ``gunicorn graphscope.app.wsgi:server``.

The files to show come from ``GRAPHSCOPE_FILES`` (paths joined by the platform's path
separator); without it, the bundled samples.
"""

from __future__ import annotations

import os

from .server import create_app

app = create_app([p for p in os.environ.get("GRAPHSCOPE_FILES", "").split(os.pathsep) if p])
server = app.server
