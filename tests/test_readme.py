"""The README's every example, run as written: each ``console`` block's commands in a folder of
one's own (``papers.jsonl``, the example pile, stands for the user's files), with the output the README shows (numbers masked, ``...`` for what it leaves
out), and each ``python`` block. A block after ``<!-- not run: why -->`` is not run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

README = ROOT / "README.md"
BLOCK = re.compile(r"(?P<skip><!-- not run:[^>]*-->\n)?```(?P<lang>[a-z]*)\n(?P<body>.*?)^```", re.S | re.M)


def blocks(text: str) -> list[tuple[str, str, int]]:
    """The README's fenced blocks that run: (language, body, line)."""
    return [
        (m["lang"], m["body"], text.count("\n", 0, m.start()) + 1)
        for m in BLOCK.finditer(text)
        if not m["skip"] and m["lang"] in ("console", "python")
    ]


def commands(body: str) -> list[tuple[str, list[str]]]:
    """A console block's commands (``$ ``, with here-documents) and the output shown after each."""
    found: list[tuple[str, list[str]]] = []
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.startswith("$ "):
            found[-1][1].append(line)
            continue
        command = line[2:]
        heredoc = re.search(r"<<'?(\w+)'?", command)
        if heredoc:
            while lines[i] != heredoc[1]:
                command += "\n" + lines[i]
                i += 1
            command += "\n" + lines[i]
            i += 1
        found.append((command, []))
    return found


def _mask(line: str) -> str:
    """A line with its numbers as ``#`` and its runs of spaces as one: what the README's
    examples promise beyond the numbers of one run."""
    return " ".join(re.sub(r"\d+(?:\.\d+)?", "#", line).split())


def matches(expected: list[str], actual: str) -> bool:
    """Whether ``actual`` reads as ``expected``: numbers masked, a ``...`` line standing for
    any lines and ``...`` within a line for any text."""
    pattern = ""
    for line in expected:
        if line.strip() == "...":
            pattern += r"(?:[^\n]*\n)*?"
        else:
            pattern += ".*?".join(re.escape(_mask(part)) for part in line.split("...")) + r"\n"
    text = "".join(_mask(line) + "\n" for line in actual.splitlines())
    return re.fullmatch(pattern, text, re.S) is not None


def users_files(folder: Path) -> dict[str, str]:
    """``papers.jsonl``: the README's example pile (a copy of ``docs/example/papers.jsonl``,
    40 abstracts of 2022-24 the shipped model did not learn from). Returns the area their
    reader gave each (``none``: no area), by id."""
    text = (ROOT / "docs" / "example" / "papers.jsonl").read_text(encoding="utf-8")
    (folder / "papers.jsonl").write_text(text, encoding="utf-8")
    return {record["id"]: record["area"] for record in map(json.loads, text.splitlines())}


@pytest.mark.slow  # trains twice, as the README does
def test_every_example_in_the_readme_runs_as_written(tmp_path, monkeypatch):
    text = README.read_text(encoding="utf-8")
    found = blocks(text)
    assert sum(lang == "console" for lang, _, _ in found) >= 5 and any(
        lang == "python" for lang, _, _ in found
    )
    folder = tmp_path / "work"
    folder.mkdir()
    users_files(folder)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("TAGGER_DEBUG", None)
    cwd = folder
    where = tmp_path / "cwd"
    for lang, body, line in found:
        if lang == "python":
            monkeypatch.chdir(cwd)
            exec(compile(body, f"README.md:{line}", "exec"), {})
            continue
        for command, expected in commands(body):
            script = f"cd {cwd}\n{command}\nstatus=$?\npwd > {where}\nexit $status\n"
            run = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=600)
            cwd = Path(where.read_text().strip())
            shown = run.stdout + run.stderr
            failed = run.returncode != 0 and not any(e.startswith("tagger: ") for e in expected)
            assert not failed and matches(expected, shown), (
                f"README.md:{line}: $ {command}\nexit status {run.returncode}; printed:\n{shown}"
            )


def test_the_matching_masks_numbers_and_skips_what_is_left_out():
    assert matches(["tagged 19 abstract(s): llm 5, ...", "...", "model: the shipped model"],
                   "tagged 7 abstract(s): llm 2, rl 1\nmore\nlines\nmodel: the shipped model\n")  # fmt: skip
    assert not matches(["tagged 19 abstract(s)"], "tagged 19 abstracts\n")
    assert not matches(["a", "b"], "a\n")
    assert commands("$ printf 'x' > f <<'EOF'\nbody\nEOF\n$ cat f\nx\n") == [
        ("printf 'x' > f <<'EOF'\nbody\nEOF", []),
        ("cat f", ["x"]),
    ]
