"""The package's size: every line of its Python files, and the lines of code among them (not a
docstring, a comment or a blank).

    python tests/benchmarks/count_lines.py [tagger]
"""

import ast
import io
import sys
import tokenize
from pathlib import Path

SKIPPED = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENDMARKER,
}
SCOPES = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def docstring_lines(tree: ast.AST) -> set[int]:
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, SCOPES) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(getattr(first.value, "value", None), str):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def count(source: str) -> tuple[int, int]:
    docs = docstring_lines(ast.parse(source))
    code = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in SKIPPED:
            code.update(line for line in range(token.start[0], token.end[0] + 1) if line not in docs)
    return len(source.splitlines()), len(code)


def main() -> None:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "tagger")
    counts = [count(path.read_text(encoding="utf-8")) for path in sorted(folder.rglob("*.py"))]
    print(f"{folder}: {sum(c[0] for c in counts):,} lines, {sum(c[1] for c in counts):,} lines of code")


if __name__ == "__main__":
    main()
