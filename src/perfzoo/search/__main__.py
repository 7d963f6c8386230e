"""``python -m perfzoo.search``: see :mod:`perfzoo.search.cli`."""

import sys

from perfzoo.search.cli import main

if __name__ == "__main__":
    sys.exit(main())
