"""Host-side image preparation: the sha256 pins are checked before any build (real files)."""

import hashlib
import subprocess
import sys

import pytest

from labs import PROJECT_ROOT
from labs.infra import image_prepare, images
from labs.infra.containers import ContainerError


def pinned_folder(tmp_path, files):
    folder = tmp_path / "lib"
    folder.mkdir()
    lines = []
    for name, content in files.items():
        (folder / name).write_bytes(content)
        lines.append(f"{hashlib.sha256(content).hexdigest()}  {name}")
    listing = tmp_path / "jars.sha256"
    listing.write_text("\n".join(lines) + "\n")
    return folder, listing


def test_matching_files_pass(tmp_path):
    folder, listing = pinned_folder(tmp_path, {"a.jar": b"one", "b.jar": b"two"})
    assert image_prepare.check_sha256_list(folder, listing) == 2


def test_a_changed_file_is_refused_by_name(tmp_path):
    folder, listing = pinned_folder(tmp_path, {"a.jar": b"one", "b.jar": b"two"})
    (folder / "b.jar").write_bytes(b"tampered")
    with pytest.raises(ContainerError, match="b.jar does not have the sha256"):
        image_prepare.check_sha256_list(folder, listing)


def test_missing_and_unexpected_files_are_named(tmp_path):
    folder, listing = pinned_folder(tmp_path, {"a.jar": b"one"})
    (folder / "a.jar").unlink()
    (folder / "c.jar").write_bytes(b"extra")
    with pytest.raises(ContainerError, match="missing a.jar; unexpected c.jar"):
        image_prepare.check_sha256_list(folder, listing)


def test_a_malformed_pin_list_is_one_line(tmp_path):
    folder, listing = pinned_folder(tmp_path, {"a.jar": b"one"})
    listing.write_text("not-a-hash a.jar\n")
    with pytest.raises(ContainerError, match="line 1: not"):
        image_prepare.check_sha256_list(folder, listing)


def test_recipes_that_fetch_pin_what_they_fetch():
    """Every recipe with a host-side step carries the sha256 list its Dockerfile checks."""
    for recipe in images.RECIPES.values():
        dockerfile = (recipe.folder / "Dockerfile").read_text()
        if recipe.prepare is image_prepare.fetch_maven_jars:
            assert (recipe.folder / "jars.sha256").is_file()
            assert "sha256sum --strict --quiet -c ../jars.sha256" in dockerfile
        elif recipe.prepare is image_prepare.fetch_wheels:
            assert (recipe.folder / "wheels.sha256").is_file()
            assert "sha256sum --strict --quiet -c wheels.sha256" in dockerfile
        else:
            assert recipe.prepare is None, recipe.name


def test_the_wheel_the_image_pins_is_the_version_the_project_pins():
    pins = (PROJECT_ROOT / "pyproject.toml").read_text()
    wanted = (images.RECIPES["rocksdb"].folder / "wheels.txt").read_text().splitlines()[1]
    assert f'"{wanted}"' in pins


def test_unknown_image_is_a_usage_error_naming_the_known_ones():
    result = subprocess.run([sys.executable, "-m", "labs", "images", "build", "scylla"],
                            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "cassandra" in result.stderr and "rocksdb" in result.stderr
    assert "Traceback" not in result.stderr
