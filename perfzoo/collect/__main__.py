"""``python -m perfzoo.collect``: see :mod:`perfzoo.collect.cli`."""

import sys

from perfzoo.collect.cli import main

if __name__ == "__main__":
    sys.exit(main())
