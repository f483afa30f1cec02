"""``python -m ksched`` runs the command line."""

import sys

from ksched.cli import main

sys.exit(main())
