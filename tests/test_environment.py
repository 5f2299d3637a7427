"""environment.yml (conda) and pyproject.toml (pip) must name the same pinned packages."""

import re
import tomllib

from conftest import PROJECT_ROOT


def normalise(requirement: str) -> str:
    name, _, version = requirement.partition("==")
    return re.sub(r"[-_.]+", "-", name.strip().lower()) + "==" + version.strip()


def pyproject_pins() -> set[str]:
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    pins = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        pins += extra
    return {normalise(p) for p in pins}


def environment_pins() -> set[str]:
    pins, in_pip = set(), False
    for line in (PROJECT_ROOT / "environment.yml").read_text().splitlines():
        stripped = line.strip()
        if stripped == "- pip:":
            in_pip = True
            continue
        if in_pip and stripped.startswith("- ") and "==" in stripped:
            pins.add(normalise(stripped[2:]))
    return pins


def test_every_dependency_is_pinned_exactly():
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    for requirement in project["dependencies"]:
        assert "==" in requirement, requirement


def test_environment_and_pyproject_agree():
    assert environment_pins() == pyproject_pins()


def test_environment_uses_python_311():
    assert "python=3.11" in (PROJECT_ROOT / "environment.yml").read_text()
