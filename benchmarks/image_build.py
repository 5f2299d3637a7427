"""How long an image build takes: cold (empty download cache, no docker layer cache) and cached.

    sudo .venv/bin/python benchmarks/image_build.py cassandra

Cold: the recipe's host-side step runs with an empty download cache (Maven's or pip's) and
`docker build` runs without its layer cache, into a temporary tag that is removed after;
the base image (debootstrap) is reused when present, as it is shared by every recipe.
Cached: `python -m labs images build NAME` when the image is up to date (a recipe-hash
check). Prints one line per figure.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

from labs.infra import images  # noqa: E402
from labs.infra.containers import local_engine  # noqa: E402
from labs.progress import Progress  # noqa: E402


def cold_build(name: str) -> float:
    recipe = images.recipe_named(name)
    client = local_engine(timeout_s=3600)
    tag = f"storage-labs/benchmark-{name}:cold"
    base = images.build_base(client, Progress("base", 1))
    with tempfile.TemporaryDirectory(prefix="storage-labs-bench-cache-") as cache:
        os.environ["XDG_CACHE_HOME"] = cache  # an empty Maven/pip download cache
        started = time.monotonic()
        try:
            images.build_recipe_image(client, recipe, base, tag, Progress(f"cold {name}", 2),
                                      nocache=True)
            seconds = time.monotonic() - started
        finally:
            del os.environ["XDG_CACHE_HOME"]
            try:
                client.images.remove(tag)
            except Exception:
                pass  # the build failed before tagging
    return seconds


def cached_build(name: str) -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "labs", "images", "build", name], cwd=PROJECT_ROOT,
                   check=True, capture_output=True)
    return time.monotonic() - started


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "cassandra"
    print(f"{name}: cold build (empty download cache, no layer cache): "
          f"{cold_build(name):.1f} s", flush=True)
    print(f"{name}: cached build (image up to date, process start included): "
          f"{cached_build(name):.1f} s")


if __name__ == "__main__":
    main()
