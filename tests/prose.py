"""Real English prose that is not about machine learning, on every machine: the docstrings of
the Python standard library. A tagger should be unsure about it."""

from __future__ import annotations

import importlib
import inspect

MODULES = (
    "argparse", "calendar", "collections", "csv", "datetime", "decimal", "email.message", "fractions",
    "ftplib", "gzip", "http.client", "imaplib", "json", "logging", "mailbox", "pathlib", "shutil",
    "smtplib", "socket", "sqlite3", "string", "tarfile", "textwrap", "threading", "urllib.parse",
    "uuid", "wave", "zipfile",
)  # fmt: skip


def stdlib_docstrings(min_words: int = 25, limit: int = 200) -> list[str]:
    """Docstrings of at least ``min_words`` words from standard-library modules and their
    classes and functions, in a fixed order, at most ``limit`` of them."""
    found: list[str] = []
    seen: set[str] = set()
    for name in MODULES:
        module = importlib.import_module(name)
        objects = [module] + [
            obj for _, obj in sorted(vars(module).items()) if inspect.isclass(obj) or inspect.isfunction(obj)
        ]
        for obj in objects:
            doc = inspect.getdoc(obj) or ""
            if len(doc.split()) >= min_words and doc not in seen:
                seen.add(doc)
                found.append(" ".join(doc.split()))
    return found[:limit]
