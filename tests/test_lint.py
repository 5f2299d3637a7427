"""The code passes the project's linter (ruff, configured in pyproject.toml), and its
functions stay small: at most 60 lines and a McCabe complexity of 12 (ruff's C901, set in
pyproject.toml)."""

import ast
import re
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


# A percentage formatted in place ("{share:.0%}") reads "12%", where the book's convention
# (labs/book/number_text.py) is "12 %" and never "0 %" for a share that is not 0.
PERCENT_FORMAT = re.compile(r"\{[^{}\n]*:[+ ]?,?\.?\d*%\}")


def percent_formats(source: str) -> list[str]:
    return PERCENT_FORMAT.findall(source)


def test_the_percent_check_finds_a_percentage_formatted_in_place():
    assert percent_formats('x = f"{share:.0%} and {error:+.1%}"') == ["{share:.0%}",
                                                                      "{error:+.1%}"]
    assert percent_formats('x = nt.percent(share) + f"{n:,.0f}"') == []


def test_every_percentage_in_labs_goes_through_the_one_number_format():
    found = [f"{path.relative_to(PROJECT_ROOT)}: {spec}"
             for path in sorted((PROJECT_ROOT / "labs").rglob("*.py"))
             for spec in percent_formats(path.read_text())]
    assert found == [], "use labs.book.number_text.percent:\n" + "\n".join(found)


PARAMETER_BY_NAME = re.compile(r"""meta\[["']parameters["']\]\[""")


def parameters_by_name(source: str) -> list[str]:
    """Lines that index a recorded run's parameters by a field's name (run.meta["parameters"]
    ["rows"]): page code reads them typed, `Parameters.of(run).rows`."""
    return [line.strip() for line in source.splitlines() if PARAMETER_BY_NAME.search(line)]


def test_the_parameter_check_finds_a_field_read_by_name():
    assert parameters_by_name('rows = int(run.meta["parameters"]["rows"])') != []
    assert parameters_by_name("x = run.meta['parameters']['seed']") != []
    assert parameters_by_name("rows = Parameters.of(run).rows") == []


def test_no_lab_reads_a_recorded_runs_parameters_by_name():
    found = [f"{path.relative_to(PROJECT_ROOT)}: {line}"
             for path in sorted((PROJECT_ROOT / "labs").rglob("*.py"))
             for line in parameters_by_name(path.read_text())]
    assert found == [], "read them typed, Parameters.of(run):\n" + "\n".join(found)
