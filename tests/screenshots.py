"""Screenshots of the labelling page and of its report for docs/ (run by hand after a change
to either: python tests/screenshots.py). In a project made in a temporary folder it labels two
abstracts of a pile with the areas their reader gave them; nothing is written outside that
folder but the two PNG files."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import ROOT, copy_project
from test_browser import screenshots
from test_readme import users_files


def main() -> None:
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work) / "project"
        folder.mkdir()
        copy_project(folder, ("labels", "seeds"))
        areas = users_files(folder)  # papers.jsonl, and the reader's area of each
        for path in screenshots(folder, ROOT / "docs", Path(work), areas):
            print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
