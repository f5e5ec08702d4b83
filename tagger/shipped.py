"""Where the files that come with tagger are: inside the installed package (the wheel puts
the model in ``tagger/models/`` and the taxonomy, labels and their texts in
``tagger/taxonomy/``), or beside the package in a source checkout (``models/``, ``labels/``,
``seeds/``). The one lookup of the shipped model and of what ``tagger init`` copies."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def shipped_path(in_checkout: str, installed: str) -> Path | None:
    """The shipped file or folder: ``installed`` (relative to the package) where it exists,
    else ``in_checkout`` (relative to the checkout's top); None when neither exists."""
    for candidate in (PACKAGE / installed, PACKAGE.parent / in_checkout):
        if candidate.exists():
            return candidate
    return None
