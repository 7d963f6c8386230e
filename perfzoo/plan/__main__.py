"""``python -m perfzoo.plan``."""

import sys

from perfzoo.plan.cli import main

if __name__ == "__main__":
    sys.exit(main())
