"""The code passes the project's linter (ruff, configured in pyproject.toml), and its
functions stay small: at most 60 lines and a McCabe complexity of 12 (ruff's C901, set in
pyproject.toml)."""

import ast
import subprocess
import sys

from conftest import PROJECT_ROOT

MAX_FUNCTION_LINES = 60
LINTED = ("labs", "tests", "benchmarks")


def test_ruff_check_passes():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", *LINTED],
                            cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:]


def long_functions(source: str, max_lines: int) -> list[tuple[str, int]]:
    """(name, lines) of every function in `source` longer than `max_lines`, from its `def`
    line to its last line (decorators not counted)."""
    return [(node.name, node.end_lineno - node.lineno + 1)
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.end_lineno - node.lineno + 1 > max_lines]


def test_the_length_check_finds_a_long_function():
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    assert long_functions(f"def short():\n    pass\n\ndef long():\n{body}", MAX_FUNCTION_LINES) \
        == [("long", MAX_FUNCTION_LINES + 1)]


def test_every_function_in_labs_is_at_most_60_lines():
    too_long = [f"{path.relative_to(PROJECT_ROOT)}: {name} ({lines} lines)"
                for path in sorted((PROJECT_ROOT / "labs").rglob("*.py"))
                for name, lines in long_functions(path.read_text(), MAX_FUNCTION_LINES)]
    assert too_long == [], "split these into smaller functions:\n" + "\n".join(too_long)


def branches(count: int) -> str:
    """A function whose McCabe complexity is count + 1 (one if per branch)."""
    return "def f(x):\n" + "".join(f"    if x == {i}:\n        return {i}\n"
                                   for i in range(count)) + "    return None\n"


def test_the_complexity_limit_is_12_in_every_linted_folder():
    for folder in LINTED:
        verdicts = {}
        for complexity in (12, 13):
            result = subprocess.run(
                [sys.executable, "-m", "ruff", "check", "--stdin-filename",
                 f"{folder}/complexity_probe.py", "--output-format", "concise", "-"],
                input=branches(complexity - 1), cwd=PROJECT_ROOT, capture_output=True,
                text=True)
            verdicts[complexity] = "C901" in result.stdout
        assert verdicts == {12: False, 13: True}, (folder, verdicts)
