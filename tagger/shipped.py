"""Where the files that come with tagger are: inside the installed package (the wheel puts
the model in ``tagger/models/`` and the taxonomy, labels and their texts in
``tagger/taxonomy/``), or beside the package in a source checkout (``models/``, ``labels/``,
``seeds/``). The one lookup of the shipped model and of what ``tagger init`` copies; and the
one rule of which model tags when none is named (:func:`default_model_folder`)."""

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


CARD_FILE = "model.json"  # a model folder's card (tagger.model)
DEFAULT_MODEL_DIR = "models"  # where tagger train saves, and the model that tags when it holds one


def default_model_folder() -> str | None:
    """``models`` of the folder you run in when it holds a model (what ``tagger train`` writes
    there), else None (the shipped model): which model tags when none is named, for the
    command line and Python alike."""
    return DEFAULT_MODEL_DIR if (Path(DEFAULT_MODEL_DIR) / CARD_FILE).is_file() else None
