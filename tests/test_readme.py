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


# What differs from one run of the same commands to the next: the day (a model trained today,
# a label's time). Every other figure the README shows is checked as it is.
VARYING = re.compile(r"\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}:\d{2}Z)?")


def _mask(line: str) -> str:
    """A line with its day masked and its runs of spaces as one."""
    return " ".join(VARYING.sub("#", line).split())


def _pattern(expected: list[str]) -> str:
    """The README's output of a command as a pattern, one group a line shown (``...``, a line
    of its own, stands for any lines, and within a line for any text)."""
    pattern = ""
    for line in expected:
        if line.strip() == "...":
            pattern += r"(?:[^\n]*\n)*?"
        else:
            pattern += "(" + ".*?".join(re.escape(_mask(part)) for part in line.split("...")) + r")\n"
    return pattern


def matches(expected: list[str], actual: str) -> bool:
    """Whether ``actual`` reads as ``expected``: figures as they are (the day masked), a ``...``
    line standing for any lines and ``...`` within a line for any text."""
    text = "".join(_mask(line) + "\n" for line in actual.splitlines())
    return re.fullmatch(_pattern(expected), text, re.S) is not None


def updated(expected: list[str], actual: str) -> list[str]:
    """The README's lines of a command's output with the figures of ``actual``: each line
    shown without a ``...`` of its own replaced by the line it stands for, once the lines match
    with their numbers masked (what ``python tests/test_readme.py --update`` writes)."""

    def numbers_masked(line: str) -> str:
        return " ".join(re.sub(r"\d+(?:\.\d+)?", "#", line).split())

    lines = actual.splitlines()
    pattern = ""
    for line in expected:
        if line.strip() == "...":
            pattern += r"(?:[^\n]*\n)*?"
        else:
            pattern += (
                "(" + ".*?".join(re.escape(numbers_masked(part)) for part in line.split("...")) + r")\n"
            )
    found = re.fullmatch(pattern, "".join(numbers_masked(line) + "\n" for line in lines), re.S)
    if found is None:
        return expected
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(numbers_masked(line)) + 1)
    result, group = [], 0
    for line in expected:
        if line.strip() == "...":
            result.append(line)
            continue
        group += 1
        at = starts.index(found.start(group)) if found.start(group) in starts else None
        new = lines[at] if at is not None and "..." not in line else line
        result.append(line if _mask(new) == _mask(line) else new)  # (another day is no change)
    return result


def users_files(folder: Path) -> dict[str, str]:
    """``papers.jsonl``: the README's example pile (a copy of ``docs/example/papers.jsonl``,
    40 abstracts of 2022-24 the shipped model did not learn from). Returns the area their
    reader gave each (``none``: no area), by id."""
    text = (ROOT / "docs" / "example" / "papers.jsonl").read_text(encoding="utf-8")
    (folder / "papers.jsonl").write_text(text, encoding="utf-8")
    return {record["id"]: record["area"] for record in map(json.loads, text.splitlines())}


def run_examples(scratch: Path):
    """Run the README's examples as a user would, in a folder of ``scratch``: for each command,
    (the line of its block, the command, the output the README shows, exit status, output);
    each python block is run in the folder the commands left (and yields nothing)."""
    found = blocks(README.read_text(encoding="utf-8"))
    assert sum(lang == "console" for lang, _, _ in found) >= 5 and any(
        lang == "python" for lang, _, _ in found
    )
    folder = scratch / "work"
    folder.mkdir()
    users_files(folder)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("TAGGER_DEBUG", None)
    cwd = folder
    where = scratch / "cwd"
    for lang, body, line in found:
        if lang == "python":
            before = os.getcwd()
            os.chdir(cwd)
            try:
                exec(compile(body, f"README.md:{line}", "exec"), {})
            finally:
                os.chdir(before)
            continue
        for command, expected in commands(body):
            script = f"cd {cwd}\n{command}\nstatus=$?\npwd > {where}\nexit $status\n"
            run = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=600)
            cwd = Path(where.read_text().strip())
            yield line, command, expected, run.returncode, run.stdout + run.stderr


@pytest.mark.slow  # trains twice, as the README does
def test_every_example_in_the_readme_runs_as_written_with_its_figures(tmp_path):
    """Every figure is checked as the README shows it (a new model changes them: run
    ``python tests/test_readme.py --update`` and read the diff)."""
    for line, command, expected, status, shown in run_examples(tmp_path):
        failed = status != 0 and not any(e.startswith("tagger: ") for e in expected)
        assert not failed and matches(expected, shown), (
            f"README.md:{line}: $ {command}\nexit status {status}; printed:\n{shown}"
        )


def test_the_matching_checks_figures_and_skips_what_is_left_out():
    assert matches(["tagged 7 abstract(s): llm 2, ...", "...", "model: the shipped model"],
                   "tagged 7 abstract(s): llm 2, rl 1\nmore\nlines\nmodel: the shipped model\n")  # fmt: skip
    assert not matches(["tagged 19 abstract(s)"], "tagged 7 abstract(s)\n")  # a stale figure fails
    assert matches(["trained 2026-12-02 on 6"], "trained 2027-01-31 on 6\n")  # the day may differ
    assert not matches(["tagged 19 abstract(s)"], "tagged 19 abstracts\n")
    assert not matches(["a", "b"], "a\n")
    assert updated(["tagged 19 abstract(s): llm 5", "...", "ECE 0.1"], "tagged 7 abstract(s): llm 2\nx\nECE 0.2\n") == [
        "tagged 7 abstract(s): llm 2", "...", "ECE 0.2"
    ]  # fmt: skip
    assert commands("$ printf 'x' > f <<'EOF'\nbody\nEOF\n$ cat f\nx\n") == [
        ("printf 'x' > f <<'EOF'\nbody\nEOF", []),
        ("cat f", ["x"]),
    ]


def update_readme() -> int:
    """Rewrite the README's example outputs with the figures a run gives now (after a new
    model): ``python tests/test_readme.py --update``; then read the diff."""
    import tempfile

    text = README.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    changed = 0
    with tempfile.TemporaryDirectory() as scratch:
        outputs = list(run_examples(Path(scratch)))
    for block_line, command, expected, _, shown in outputs:
        new = updated(expected, shown)
        if new == expected:
            continue
        start = next(
            i
            for i in range(block_line, len(lines))
            if lines[i].rstrip("\n") == f"$ {command.splitlines()[0]}"
        )
        start += command.count("\n") + 1
        lines[start : start + len(expected)] = [f"{line}\n" for line in new]
        changed += sum(a != b for a, b in zip(new, expected))
    README.write_text("".join(lines), encoding="utf-8")
    print(f"README.md: {changed} line(s) of example output updated", file=sys.stderr)
    return 0


if __name__ == "__main__" and sys.argv[1:] == ["--update"]:
    sys.path.insert(0, str(Path(__file__).parent))
    raise SystemExit(update_readme())
