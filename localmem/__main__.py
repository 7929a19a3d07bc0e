"""``python -m localmem``: the command line (see ``localmem.cli``)."""

import sys

from .cli import main

sys.exit(main())
