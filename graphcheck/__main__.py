"""``python -m graphcheck`` runs the command-line interface."""

import sys

from graphcheck.cli import main

sys.exit(main())
