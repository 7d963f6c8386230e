"""A predictor package outside perfzoo, as a user would write one (tests/test_plugins.py puts
``tests/data`` on the path, or installs an entry point for it)."""
