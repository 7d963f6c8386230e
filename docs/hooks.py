"""MkDocs hook (mkdocs.yml ``hooks``) for the docstrings mkdocstrings renders, and the pages:

* doctest examples are plain text in the docstrings (``>>> call()`` then its output, as
  ``python -m pytest --doctest-modules`` reads them); in Markdown such lines are a quote whose
  ``[...]`` output reads as a link, so every run of doctest lines is fenced as ``pycon`` code;
* Sphinx roles (``:func:`name```, ``:class:`~pkg.Name```) are shown as the code they name.
"""

from __future__ import annotations

import re

from markdown import Extension
from markdown.preprocessors import Preprocessor
from mkdocs.plugins import event_priority

FENCE = re.compile(r"^\s*(```|~~~)")
ROLE = re.compile(r":(?:func|class|mod|meth|data|attr|exc|obj|ref|doc|const):`(~?)([^`]+)`")


def _role(match: re.Match) -> str:
    return f"`{match[2].rsplit('.', 1)[-1] if match[1] else match[2]}`"  # ~pkg.Name shows Name, as Sphinx does


def fence_doctests(lines: list[str]) -> list[str]:
    """``lines`` with each run of doctest lines (``>>>`` at the start of a line, its ``...``
    continuations and output, up to a blank line) inside a fenced ``pycon`` block, and Sphinx
    roles elsewhere as code; lines inside existing fences stay as they are.

    >>> fence_doctests(["See :func:`~a.f`.", ">>> f()[:1]", "['a']", "", "More."])
    ['See `f`.', '', '```pycon', '>>> f()[:1]', "['a']", '```', '', '', 'More.']
    """
    out: list[str] = []
    in_fence, in_doctest = False, False
    for line in lines:
        if in_doctest and not line.strip():
            out += ["```", ""]
            in_doctest = False
        if not in_doctest and FENCE.match(line):
            in_fence = not in_fence
        if not in_fence and not in_doctest and line.startswith(">>>"):
            out += ["", "```pycon"]
            in_doctest = True
        out.append(line if in_fence or in_doctest else ROLE.sub(_role, line))
    if in_doctest:
        out.append("```")
    return out


class _DoctestPreprocessor(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        return fence_doctests(lines)


class DoctestFences(Extension):
    def extendMarkdown(self, md) -> None:  # noqa: N802 (Markdown's name)
        md.preprocessors.register(_DoctestPreprocessor(md), "perfzoo_doctests", 40)  # before fenced code (25-30)


@event_priority(100)  # before mkdocstrings reads the extensions
def on_config(config):
    config.markdown_extensions.append(DoctestFences())
    return config
