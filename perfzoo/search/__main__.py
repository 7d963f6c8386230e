"""``python -m perfzoo.search``: see :mod:`perfzoo.search.cli`; ``python -m perfzoo.search benchmark``:
the surrogate benchmark, :mod:`perfzoo.search.benchmark`."""

import sys

if __name__ == "__main__":
    if sys.argv[1:2] == ["benchmark"]:
        from perfzoo.search.benchmark import main as benchmark

        sys.exit(benchmark(sys.argv[2:]))
    from perfzoo.search.cli import main

    sys.exit(main())
