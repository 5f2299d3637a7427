"""Host-side steps that fill an image's build context before `docker build`.

Some engines do not come as Debian packages: Cassandra's server jars are on Maven Central,
the rocksdict wheel is on PyPI. They are fetched on the machine that builds the image,
with that machine's own trust store and proxy settings (a fresh container may not trust
them), into the journaled scratch build context (labs.infra.scratch), and checked byte for
byte against the sha256 list in the recipe before `docker build` sees them; the Dockerfile
checks them again. So every machine that builds a recipe gets the same files, or stops
with one line saying which file differs.

    fetch_maven_jars(context, progress)   # mvn dependency:copy-dependencies -> context/lib
    fetch_wheels(context, progress)       # pip download of wheels.txt -> context/wheels
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

from labs.infra.containers import ContainerError
from labs.infra.paths import cache_dir
from labs.progress import Progress


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_sha256_list(folder: Path, listing: Path) -> int:
    """Every file `listing` names is in `folder` with that sha256, and nothing else is.

    `listing` has `sha256sum` lines (`<hex>  <name>`), names relative to `folder`.
    Returns how many files were checked.
    """
    wanted: dict[str, str] = {}
    for number, line in enumerate(listing.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        digest, _, name = line.partition("  ")
        if len(digest) != 64 or not name:
            raise ContainerError(f"{listing.name} line {number}: not `<sha256>  <file>`")
        wanted[Path(name).name] = digest
    present = {p.name for p in folder.iterdir() if p.is_file()} if folder.is_dir() else set()
    missing = sorted(set(wanted) - present)
    extra = sorted(present - set(wanted))
    if missing or extra:
        raise ContainerError(
            f"the fetched files do not match {listing.name}: "
            + (f"missing {', '.join(missing[:3])}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"unexpected {', '.join(extra[:3])}" if extra else ""))
    for name, digest in sorted(wanted.items()):
        if sha256_of(folder / name) != digest:
            raise ContainerError(f"{name} does not have the sha256 that {listing.name} pins: "
                                 "the registry served a different file; not building")
    return len(wanted)


def _run(command: list[str], what: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        lines = (result.stdout + result.stderr).strip().splitlines()
        errors = [line for line in lines if "ERROR" in line] or lines or ["no output"]
        raise ContainerError(f"{what} failed with exit {result.returncode}: "
                             f"{errors[0].strip()[:300]}")


def fetch_maven_jars(context: Path, progress: Progress) -> None:
    """The jars of context/pom.xml into context/lib, checked against context/jars.sha256."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ContainerError("mvn is needed to fetch the server jars from Maven Central: "
                             "`sudo apt-get install maven`")
    # Maven's own download cache, kept between builds (every jar is checked anyway).
    repository = cache_dir() / "maven"
    repository.mkdir(parents=True, exist_ok=True)
    progress.step(f"mvn dependency:copy-dependencies (Maven Central; cache {repository})")
    _run([mvn, "-B", "-q", f"-Dmaven.repo.local={repository}", "-f", str(context / "pom.xml"),
          "dependency:copy-dependencies", f"-DoutputDirectory={context / 'lib'}"],
         "mvn dependency:copy-dependencies")
    count = check_sha256_list(context / "lib", context / "jars.sha256")
    progress.detail(f"{count} jars match jars.sha256")


def fetch_wheels(context: Path, progress: Progress) -> None:
    """The wheels context/wheels.txt pins (for the image's Python) into context/wheels.

    wheels.txt: first line `# python=3.11 platform=manylinux_2_28_x86_64`, then one
    `name==version` per line; wheels.sha256 pins the files.
    """
    lines = (context / "wheels.txt").read_text().splitlines()
    target = dict(part.split("=", 1) for part in lines[0].lstrip("# ").split())
    requirements = [line.strip() for line in lines[1:] if line.strip()
                    and not line.startswith("#")]
    progress.step(f"pip download {' '.join(requirements)} (PyPI, for Python "
                  f"{target['python']} on {target['platform']})")
    _run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
          "--only-binary=:all:", "--python-version", target["python"],
          "--implementation", "cp", "--platform", target["platform"],
          "--dest", str(context / "wheels"), *requirements], "pip download")
    count = check_sha256_list(context / "wheels", context / "wheels.sha256")
    progress.detail(f"{count} wheel(s) match wheels.sha256")
