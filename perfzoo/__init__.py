"""perfzoo: predict and search distributed-training performance from real job records.

``docs/architecture.md`` is the map (data flow, one line per module, how to extend each part);
every module's docstring says the rest. The commands are ``perfzoo <command>`` (:mod:`perfzoo.cli`),
or ``python -m perfzoo.<command>``: ``plan``, ``predict``, ``bench``, ``collect``, ``search``,
``tune``, and ``perfzoo datasets``.
"""

__version__ = "0.1.0"
