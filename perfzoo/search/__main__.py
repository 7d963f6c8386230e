"""``python -m perfzoo.search``: see :mod:`perfzoo.search.cli`; ``python -m perfzoo.search benchmark``:
the surrogate benchmark, :mod:`perfzoo.search.benchmark`."""

import sys

from perfzoo.search.cli import main

if __name__ == "__main__":
    sys.exit(main())
