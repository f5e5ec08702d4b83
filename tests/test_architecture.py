"""The shape of the package, checked: no import cycle (function-local imports counted), and
nothing but the entry point imports the command line (the CLI is a shell over the library)."""

import ast
import functools
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

PACKAGE = ROOT / "tagger"


@functools.cache
def parsed(source: str) -> ast.Module:
    """The syntax tree of a module's source (each parsed once in a run)."""
    return ast.parse(source)


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports() -> dict[str, set[str]]:
    """Module -> the modules of the package it imports, anywhere in its code."""
    known = modules()
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(parsed(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                target = (
                    ".".join(base + ([node.module] if node.module else [])) if node.level else node.module
                )
                for alias in node.names:  # a submodule by that name, else a name of the module
                    found = f"{target}.{alias.name}" if f"{target}.{alias.name}" in known else target
                    if found in known and found != name:
                        graph[name].add(found)
            elif isinstance(node, ast.Import):
                graph[name] |= {alias.name for alias in node.names if alias.name in known} - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(graph[module]):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while True:
                other = stack.pop()
                group.append(other)
                if other == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_import_cycle_in_the_package():
    assert cycles(imports()) == []


def test_the_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_only_the_entry_point_imports_the_command_line():
    assert [module for module, used in imports().items() if "tagger.cli" in used] == ["tagger.entry"]


def private_uses(name: str, source: str, package: str, known: set[str]) -> list[str]:
    """The private names (one leading underscore) of other modules of the package that the
    module ``name`` (in ``package``) imports, or reads as an attribute of a module it imported."""
    found, bound = [], {}
    for node in ast.walk(parsed(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(parts + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                if f"{target}.{alias.name}" in known:  # a module: its attributes are looked at below
                    bound[alias.asname or alias.name] = f"{target}.{alias.name}"
                elif target in known and target != name and _private(alias.name):
                    found.append(f"{target}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known and alias.asname:
                    bound[alias.asname] = alias.name
    for node in ast.walk(parsed(source)):
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)):
            continue
        if node.value.id in bound and bound[node.value.id] != name and _private(node.attr):
            found.append(f"{bound[node.value.id]}.{node.attr}")
    return sorted(set(found))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_module_uses_a_private_name_of_another():
    """What a module keeps to itself (a leading underscore) stays inside it: a name another
    module needs is part of its interface, named as such."""
    known = modules()
    found = {}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        if uses := private_uses(name, path.read_text(encoding="utf-8"), package, set(known)):
            found[name] = uses
    assert not found, found


def test_the_private_name_check_finds_each_kind_of_use():
    known = {"tagger.a", "tagger.b", "tagger.reading", "tagger.reading.c"}
    assert private_uses("tagger.a", "from .b import _x, y", "tagger", known) == ["tagger.b._x"]
    assert private_uses("tagger.a", "from . import b\nb._x()", "tagger", known) == ["tagger.b._x"]
    assert private_uses("tagger.reading", "from .c import _Source", "tagger.reading", known) == [
        "tagger.reading.c._Source"
    ]
    assert private_uses("tagger.a", "from .b import y\nself._x = 1\nb.__name__", "tagger", known) == []


def ruff(*arguments: str, source: str | None = None) -> subprocess.CompletedProcess:
    """ruff with the project's configuration (pyproject.toml), on files or on ``source``."""
    command = [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format=concise", *arguments]
    return subprocess.run(command, input=source, capture_output=True, text=True, cwd=ROOT, timeout=60)


@pytest.mark.parametrize(
    ("rule", "what"),
    [
        ("PLR0913", "no function takes more than six parameters but those marked"),
        ("TID251", "files are parsed by tagger.reading alone (csv.reader, json.loads banned elsewhere)"),
    ],
)
def test_the_package_keeps_ruff_s_architecture_rules(rule, what):
    """Two rules of the package's shape, ruff's (pyproject.toml configures them): a function
    of many parameters wants one object to carry them; a module that parses a file itself
    has its own bad-record rules."""
    pytest.importorskip("ruff")
    done = ruff("--select", rule, "tagger")
    assert done.returncode == 0, f"{what}:\n{done.stdout}{done.stderr}"


def test_ruff_s_rules_find_what_they_are_for():
    pytest.importorskip("ruff")
    long = ruff(
        "--select",
        "PLR0913",
        "--stdin-filename",
        "tagger/training.py",
        "-",
        source="def f(a, b, c, d, e, f, g): pass\n",
    )
    assert "PLR0913" in long.stdout
    parse = ruff(
        "--select",
        "TID251",
        "--stdin-filename",
        "tagger/labelstore.py",
        "-",
        source="import csv\ncsv.reader([])\n",
    )
    assert "TID251" in parse.stdout


def patched_tunables(source: str) -> list[str]:
    """The module-level constants (NAMES_IN_CAPITALS) a test's code patches with
    ``monkeypatch.setattr``, by object and name or by dotted path."""
    found = []
    for node in ast.walk(parsed(source)):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "setattr" and node.args):
            continue
        dotted = isinstance(
            node.args[0], ast.Constant
        )  # setattr("module.NAME", value), else (object, "NAME", value)
        named = node.args[0] if dotted or len(node.args) < 2 else node.args[1]
        if isinstance(named, ast.Constant) and isinstance(named.value, str):
            name = named.value.rsplit(".", 1)[-1]
            if len(name) > 2 and name.isupper():
                found.append(named.value)
    return found


def test_no_test_patches_a_module_level_tunable():
    """The recipe's policy is a Plan passed in (tagger.plan), limits are tested at their real
    values: a test that patches a module's constant tests another program than users run."""
    found = {
        path.name: names
        for path in (ROOT / "tests").glob("*.py")
        if (names := patched_tunables(path.read_text(encoding="utf-8")))
    }
    assert not found, found


def test_the_tunable_check_finds_a_patch():
    assert patched_tunables('monkeypatch.setattr(training, "SELECT_FROM", 30)') == ["SELECT_FROM"]
    assert patched_tunables('monkeypatch.setattr("tagger.source.MAX_LINE_BYTES", 9)') == [
        "tagger.source.MAX_LINE_BYTES"
    ]
    assert patched_tunables('monkeypatch.setattr(sys, "stderr", x)') == []
    assert patched_tunables('monkeypatch.setattr(tagger.source, "MAX_LINE_BYTES", 9)') == ["MAX_LINE_BYTES"]


def test_the_command_line_is_arguments_and_printing():
    """The decisions (which model, which labels, which store, the retrain) are the library's
    (tagger.project.Project); the command line parses (tagger.arguments) and prints."""
    cli = (PACKAGE / "cli.py").read_text(encoding="utf-8")
    assert len(cli.splitlines()) <= 600
    for decision in (
        "load_training_set",
        "read_labelled_file",
        "LabelledFile(",
        "ProjectLabels(",
        "CARD_FILE",
    ):
        assert decision not in cli, decision


def found_outside(check, home: str) -> dict:
    """What ``check`` finds in each module of the package but ``home`` (the one place of it)."""
    return {
        name: found
        for name, path in modules().items()
        if name != home and (found := check(path.read_text(encoding="utf-8")))
    }


EXTENSION = re.compile(r"^\.(txt|csv|tsv|jsonl|json|parquet|bib|ris|xlsx|xls|atom|xml|nbib|gz|bz2|xz|zst)$")


def extension_literals(source: str) -> list[str]:
    """The file extensions ``source`` spells as a string of their own (a key, a comparison):
    what a format is, and what may be done with it, is the table's (tagger/formats.py)."""
    return [
        node.value
        for node in ast.walk(parsed(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and EXTENSION.match(node.value)
    ]


def test_one_table_of_formats_by_extension():
    """Reading, writing tags, the report and the label store ask tagger.formats what a
    name's extension means; none keeps its own map (three did, and disagreed)."""
    assert not found_outside(extension_literals, "tagger.formats")


def test_the_format_check_finds_an_extension_map():
    assert extension_literals('kinds = {".csv": 1}\nname.endswith(".gz")') == [".csv", ".gz"]
    assert extension_literals('fix = "End it in .csv"\nx = "csv"') == []


def stderr_writes(source: str) -> list[int]:
    """The lines of ``source`` that write to standard error themselves (``print(...,
    file=sys.stderr)``, ``sys.stderr.write``): what tagger.terminal.say is for."""
    found = []
    for node in ast.walk(parsed(source)):
        if isinstance(node, ast.Call):
            target = ast.unparse(node.func)
            to_stderr = any(k.arg == "file" and ast.unparse(k.value) == "sys.stderr" for k in node.keywords)
            if (target == "print" and to_stderr) or target == "sys.stderr.write":
                found.append(node.lineno)
    return found


def test_terminal_feedback_goes_through_one_channel():
    """Every message on the terminal goes through tagger.terminal.say (it went by 45 prints in
    the command line, the page's and the stages' own, and sys.stderr.write)."""
    assert not found_outside(stderr_writes, "tagger.terminal")


def test_the_channel_check_finds_a_write_to_stderr():
    assert stderr_writes('print("x", file=sys.stderr)\nsys.stderr.write("y")\nprint("z")') == [1, 2]
