"""``python -m graphscope``: the ``graphscope`` command."""

import sys

from .cli import main

sys.exit(main())
