"""For a WSGI server: ``gunicorn graphscope.app.wsgi:server``.

The files to show come from ``GRAPHSCOPE_FILES`` (paths joined by the platform's path
separator); without it, the bundled samples. The server answers for localhost names and for
the names in ``GRAPHSCOPE_HOSTS`` (comma-separated: the names a proxy in front of it serves);
a request for any other Host gets 403 (``guard.py``).
"""

from __future__ import annotations

import os

from .serve import guard
from .serve.server import create_app

app = create_app([p for p in os.environ.get("GRAPHSCOPE_FILES", "").split(os.pathsep) if p])
server = app.server
guard.install(server, guard.allowed_hosts(extra=os.environ.get("GRAPHSCOPE_HOSTS", "").split(",")))
