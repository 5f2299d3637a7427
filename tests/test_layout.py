"""The package's shape: imports point one way, no cycles, small modules, pure tools.

Walks every import statement in labs/ with the ast module, including imports inside
functions (a cycle hidden in a late import is still a cycle).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from labs import registry

LABS = Path(__file__).resolve().parents[1] / "labs"
MAX_LINES = 500


def module_name(path: Path) -> str:
    parts = path.relative_to(LABS.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in LABS.rglob("*.py")}


def imports_of(name: str) -> set[str]:
    """The project modules `name` imports, anywhere in its body."""
    tree = ast.parse(MODULES[name].read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            if target.startswith("labs"):
                # `from labs.x import y`: y may be a module or a name in x; keep what exists.
                while target and target not in MODULES:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    found.add(target)
    return found


GRAPH = {name: imports_of(name) for name in MODULES}


def closure(start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for target in GRAPH[todo.pop()]:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def test_no_import_cycles():
    cycles = sorted(name for name in GRAPH if name in closure(name)
                    and name != "labs")  # importing a package runs its __init__ only
    assert cycles == [], f"modules on an import cycle: {cycles}"


def test_the_page_side_never_imports_the_infrastructure():
    page_side = [name for name in MODULES
                 if name.startswith("labs.book") or name.endswith((".page", ".charts",
                                                                  ".params", ".model"))
                 or name in {lab.package for lab in registry.labs()}]
    assert len(page_side) > 10
    for name in page_side:
        reached = sorted(m for m in closure(name) if m.startswith("labs.infra"))
        assert reached == [], f"{name} reaches {reached}: the book would need the infra"


# Layers, lowest first: leaf helpers -> tools/models/records -> infra and book plumbing ->
# the labs -> the registry -> the commands. A module imports only its own layer or lower.
LAYER_OF_MODULE = {"labs.errors": 0, "labs.progress": 0, "labs.lab": 1, "labs.records": 1,
                   "labs.rawfiles": 1, "labs.privacy": 1, "labs.exchange": 1,
                   "labs.classes": 1, "labs.local_facts": 1, "labs.timings": 1,
                   "labs.registry": 4, "labs.catalog": 4,
                   "labs.__main__": 5}
LAYER_OF_PREFIX = (("labs.tools", 1), ("labs.models", 1), ("labs.infra", 2),
                   ("labs.book", 2),  # plumbing the pages use; never the infrastructure
                   ("labs.commands", 5))


def layers() -> dict[str, int]:
    layer = dict(LAYER_OF_MODULE)
    for name in MODULES:
        for prefix, number in LAYER_OF_PREFIX:
            if name.startswith(prefix):
                layer.setdefault(name, number)
    for lab in registry.labs():
        for name in MODULES:
            if name == lab.package or name.startswith(lab.package + "."):
                layer[name] = 3
    return layer


def test_imports_point_one_way():
    """leaf helpers -> tools/models/records -> infra -> labs -> commands; book -> pages."""
    layer = layers()
    for name, targets in GRAPH.items():
        for target in targets if name in layer else ():
            if target in layer and target != "labs":
                assert layer[target] <= layer[name], f"{name} imports {target}"
            if name.startswith("labs.book"):
                assert not target.startswith("labs.infra"), f"{name} imports {target}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_stay_small(name):
    lines = len(MODULES[name].read_text().splitlines())
    assert lines <= MAX_LINES, f"{name} has {lines} lines; split it (limit {MAX_LINES})"


TOOL_IO = {"subprocess", "socket", "requests", "docker", "fabric", "invoke", "shutil"}
TOOL_IO_CALLS = {"open", "read_text", "read_bytes", "write_text", "write_bytes", "iterdir",
                 "glob", "run", "Popen", "system"}


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.startswith("labs.tools.")))
def test_tools_build_commands_and_parse_output_without_io(name):
    tree = ast.parse(MODULES[name].read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
            assert (module or "").split(".")[0] not in TOOL_IO, f"{name} imports {module}"
        if isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else \
                getattr(node.func, "id", "")
            assert called not in TOOL_IO_CALLS, f"{name} calls {called}() (line {node.lineno})"


def test_one_name_per_lab_everywhere():
    root = LABS.parent
    for lab in registry.labs():
        assert lab.package == "labs." + lab.name.replace("-", "_")
        assert lab.parameters.LAB == lab.name
        if lab.book_page:
            page = root / lab.book_page
            assert page.is_file(), lab.book_page
            assert any((root / "data" / "runs" / lab.name).glob("*/run.json")), (
                f"{lab.name}: no recorded run in data/runs/{lab.name}/")
            assert lab.name in page.read_text() or lab.name.split("-")[0] in page.read_text()
        for part in ("params", "run", "page"):
            assert (LABS / lab.package.removeprefix("labs.") / f"{part}.py").is_file(), (
                f"{lab.name}: the contract needs {part}.py")
