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


# A value a python example shows in a comment: a literal (a string, a list, a repr) after an
# expression, or the lines a print shows, as comments under it.
SHOWN = re.compile(r"""^(?P<code>\S.*?)\s+# (?P<shown>['"\[{(<]|array\().*$""")


def _literal(comment: str) -> str:
    """The literal that starts ``comment`` (brackets and quotes balanced), without the prose
    after it (``[('generative', ...)]: the area...`` -> ``[('generative', ...)]``)."""
    closing = {"(": ")", "[": "]", "{": "}", "<": ">"}
    stack: list[str] = []
    quote = ""
    for k, character in enumerate(comment):
        if quote:
            quote = "" if character == quote else quote
        elif character in "'\"":
            quote = character
        elif character in closing:
            stack.append(closing[character])
        elif stack and character == stack[-1]:
            stack.pop()
        else:
            continue
        if not quote and not stack:
            return comment[: k + 1]
    return comment


def checked(body: str) -> str:
    """A python example with each value it shows checked: ``EXPR  # 'robotics'`` becomes a
    check that ``repr(EXPR)`` reads so (``print(X)  # shown``: ``str(X)``), and a ``print(X)``
    followed by comment lines a check that ``str(X)`` is those lines; ``...`` stands for any
    text, and the day may differ."""
    import ast

    lines, out = body.splitlines(), []
    k = 0
    while k < len(lines):
        line = lines[k]
        k += 1
        match = SHOWN.match(line)
        if match and not match["code"].rstrip().endswith((",", "(", "[")):
            code = match["code"].rstrip()
            try:
                ast.parse(code, mode="eval")
            except SyntaxError:
                out.append(line)
                continue
            shown = _literal(line[match.start("shown") :])
            printed = re.fullmatch(r"print\((?P<x>.*)\)", code)
            value = f"str({printed['x']})" if printed else f"repr({code})"
            out.append(f"__shown__({value}, {shown!r}, {code!r})")
            continue
        printed = re.fullmatch(r"print\((?P<x>.*)\)", line)
        below = []
        while printed and k < len(lines) and lines[k].startswith("# "):
            below.append(lines[k][2:])
            k += 1
        out.append(f"__shown__(str({printed['x']}), {chr(10).join(below)!r}, {line!r})" if below else line)
    return "\n".join(out) + "\n"


def shown_as(said: list[str]):
    """The check :func:`checked` calls: a value that does not read as the example shows it is
    added to ``said``."""

    def check(actual: str, shown: str, code: str) -> None:
        if not matches(shown.splitlines(), actual + "\n"):
            said.append(f"{code} shows {shown!r}; it is {actual!r}")

    return check


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
            said: list[str] = []
            try:
                exec(compile(checked(body), f"README.md:{line}", "exec"), {"__shown__": shown_as(said)})
            finally:
                os.chdir(before)
            assert not said, f"README.md:{line}: " + "\n".join(said)
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


def stated(pattern: str, text: str) -> tuple[str, ...]:
    """The figures the README's prose states where ``pattern`` (spaces: any line breaks and
    spaces) finds them; a sentence that is gone fails, so that no figure goes unchecked."""
    found = re.search(pattern.replace(" ", r"\s+"), text)
    assert found, f"the README no longer says {pattern!r}: check the figure it states now"
    return found.groups()


def test_the_prose_states_the_figures_its_examples_and_tables_give(tmp_path):
    """Figures in sentences, beside the outputs the console test checks: the example pile's
    (tagged by the shipped model, set beside its reader's areas), the shipped model's review
    threshold and its answer to `hello world`, the shipped labels' counts, and the sentences
    that restate the headline table's figures."""
    import csv

    import tagger
    from tagger.project import shipped
    from tagger.reading import read_abstracts

    text = README.read_text(encoding="utf-8")
    reader = users_files(tmp_path)
    model = tagger.load_model()
    abstracts = list(read_abstracts([tmp_path / "papers.jsonl"]))  # (as tagger predict reads them)
    tags = model.predict([a.document for a in abstracts])
    right = [tag.area == reader[a.id] for a, tag in zip(abstracts, tags)]
    flagged = [tag.needs_review for tag in tags]
    none = [reader[a.id] == "none" for a in abstracts]
    assert stated(r"Set beside the reader's answers, (\d+) of the (\d+) tags are the reader's answer \((\d+)%", text) == (
        str(sum(right)), str(len(tags)), str(round(100 * sum(right) / len(tags)))
    )  # fmt: skip
    (unflagged,) = stated(r"the (\d+) tags not flagged for review are all the reader's answer", text)
    assert int(unflagged) == flagged.count(False) and all(r for r, f in zip(right, flagged) if not f)
    assert stated(r"of the (\d+) abstracts that fit no area, (\d+) are tagged `none` and the other (\d+) are flagged", text) == (
        str(sum(none)),
        str(sum(n and t.area == "none" for n, t in zip(none, tags))),
        str(sum(n and t.area != "none" and t.needs_review for n, t in zip(none, tags))),
    )  # fmt: skip
    assert stated(r"read the (\d+) flagged ones", text) == (str(sum(flagged)),)
    hello = model.predict("hello world")
    assert stated(r"`hello world` is `(\w+)` at (0\.\d+);", text) == (hello.area, f"{hello.confidence:.2f}")
    assert stated(r"right 93% of the time \((0\.\d+) for the shipped model;", text) == (
        f"{model.review_threshold:.2f}",
    )
    labels = list(csv.DictReader(shipped("labels/labels.csv").open(encoding="utf-8")))
    total, fit_none = stated(r"trained on ([\d,]+) hand labels [^|]*? (\d+) of those labels say", text)
    assert (int(total.replace(",", "")), int(fit_none)) == (
        len(labels),
        sum(r["area"] == "none" for r in labels),
    )
    # the sentences that restate the headline table's figures
    rows = {
        row.split("|")[1].strip().split(",")[0]: [cell.strip() for cell in row.split("|")[2:-1]]
        for row in text.splitlines()
        if row.startswith("| arXiv preprints") or row.startswith("| proceedings of 2022-24")
    }
    preprints, proceedings = rows["arXiv preprints of 2025"], rows["proceedings of 2022-24"]
    assert stated(r"On preprints held out by fold, (\d+)% of those that fit no area are answered `none` and most others are flagged \((\d+)% in all\)", text) == tuple(
        preprints[4].replace("%", "").split(", ")
    )  # fmt: skip
    below, right_rest, below_pre, right_pre = stated(
        r"On abstracts of 2022-24 held out by year, (\d+)% fall below it and the rest are right (\d+)% of the time, on preprints of 2025 (\d+)% and (\d+)%",
        text,
    )  # fmt: skip
    sure, sure_right = proceedings[5].replace("%", "").split(", ")
    assert (int(below), right_rest) == (100 - int(sure), sure_right)
    sure, sure_right = preprints[5].replace("%", "").split(", ")
    assert (int(below_pre), right_pre) == (100 - int(sure), sure_right)
    # the labels' sources (their files in seeds/), and the share of each feed that fits no area
    seeds = {
        path.name: len(path.read_text(encoding="utf-8").splitlines())
        for path in (ROOT / "seeds").glob("*.jsonl")
    }
    assert stated(r"hand labels \(([\d,]+) arXiv preprints of 2025, ([\d,]+) abstracts of proceedings of 2022-24, (\d+) of ICML and NeurIPS 2015-16, (\d+) seeds\)", text) == (
        f"{seeds['arxiv-2025.jsonl']:,}", f"{seeds['modern-2022-24.jsonl'] + seeds['modern-2022-24-train.jsonl']:,}",
        str(seeds["conference-2015-16.jsonl"]), str(len(labels) - sum(seeds.values())),
    )  # fmt: skip
    sizes = {
        key: [int(n.replace(",", "")) for n in re.search(r"\(([\d,]+),? ?(\d+)?", row).groups() if n]
        for key, row in (
            ("preprints", next(r for r in text.splitlines() if r.startswith("| arXiv preprints"))),
            ("proceedings", next(r for r in text.splitlines() if r.startswith("| proceedings of 2022-24"))),
        )
    }
    assert stated(r"(\d+)% of the proceedings we labelled, (\d+)% of a preprint feed", text) == (
        f"{100 * sizes['proceedings'][1] / sizes['proceedings'][0]:.0f}", f"{100 * sizes['preprints'][1] / sizes['preprints'][0]:.0f}"
    )  # fmt: skip
    # the calibration sentence, as the headline table's ECE column says
    ece = {key: float(row[1]) for key, row in (("preprints", preprints), ("proceedings", proceedings))}
    assert stated(r"held out by year, the gap between confidence and accuracy averages (0\.\d+), on preprints of 2025 (0\.\d+)", text) == (
        f"{ece['proceedings']:.2f}", f"{ece['preprints']:.2f}"
    )  # fmt: skip
    # the release before, as the table of what none labels do measured it
    before = next(
        row for row in text.splitlines() if row.startswith("| set the review threshold (the release before)")
    )
    cells = [cell.strip().split(", ") for cell in before.split("|")[2:-1]]
    said = stated(
        r"gave the reader's answer to (\d+)% of the preprints and (\d+)% of the proceedings, with a confidence that ran hot \(ECE (0\.\d+) and (0\.\d+)\)",
        text,
    )  # fmt: skip
    assert said == (
        f"{100 * float(cells[0][0]):.0f}", f"{100 * float(cells[3][0]):.0f}", f"{float(cells[0][1]):.2f}", f"{float(cells[3][1]):.2f}"
    )  # fmt: skip


def test_a_python_example_s_shown_values_are_checked():
    said: list[str] = []
    example = "x = ['a', 0.25]\nx  # ['a', ...]: a list\nx[0]  # 'b'\nprint(x[1] * 2)\n# 0.5\ny = 3  # ['not', 'checked']\n"
    exec(compile(checked(example), "example", "exec"), {"__shown__": shown_as(said)})
    assert said == ["x[0] shows \"'b'\"; it is \"'a'\""]  # the list and the print read as shown


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
