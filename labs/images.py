"""Container images for the labs, built from Debian's packages when no registry is reachable.

A reader with internet uses the official `postgres` image. Where nothing can be pulled,
`python -m labs images build postgres` builds an equivalent image:

1. `debootstrap --variant=minbase bookworm` into a scratch folder (a Debian root file system);
2. `docker import` of that folder as a base image;
3. a `docker build` on top that installs postgresql-15 and its contrib modules (pgbench,
   pageinspect) from Debian's mirror, with an entrypoint that behaves like the official
   image's for what the labs use.

Both images carry the hash of their recipe as a label; a build is skipped when an image with
the same recipe hash exists, so the image is rebuilt only when its recipe changes.
`save_image` / `load_image` move an image to an engine that cannot build it (a lab VM).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors

from labs.containers import ContainerError, engine
from labs.errors import UsageError

RECIPES_DIR = Path(__file__).resolve().parent / "image_recipes"
# The new home of recipes (labs/infra/ is where infrastructure moves); postgres follows later.
INFRA_RECIPES_DIR = Path(__file__).resolve().parent / "infra" / "image_recipes"
RECIPE_LABEL = "storage-labs.recipe"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
BASE_RECIPE = {"suite": "bookworm", "variant": "minbase", "mirror": DEBIAN_MIRROR,
               "arch": "amd64"}
LOCAL_POSTGRES = "storage-labs/postgres:15"
OFFICIAL_POSTGRES = "postgres:15"
LOCAL_MARIADB = "storage-labs/mariadb:10.11"


@dataclass(frozen=True)
class ImageChoice:
    tag: str
    source: str  # "flag", "local build" or "official"

    def describe(self) -> str:
        return f"image {self.tag} ({self.source})"


def base_recipe_hash() -> str:
    return _hash({"base": BASE_RECIPE})


def postgres_recipe_hash() -> str:
    folder = RECIPES_DIR / "postgres"
    files = {p.name: p.read_text() for p in sorted(folder.iterdir()) if p.is_file()}
    return _hash({"base": base_recipe_hash(), "files": files})


def recipe_hash(folder: Path) -> str:
    """The hash of a recipe folder's files on top of the base image's recipe."""
    files = {p.name: p.read_text() for p in sorted(Path(folder).iterdir()) if p.is_file()}
    return _hash({"base": base_recipe_hash(), "files": files})


def mariadb_recipe_hash() -> str:
    return recipe_hash(INFRA_RECIPES_DIR / "mariadb")


def _hash(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def image_recipe(client: docker.DockerClient, tag: str) -> str | None:
    """The recipe hash an image was built from, or None if the image is absent."""
    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None
    return (image.labels or {}).get(RECIPE_LABEL, "")


def build_base(client: docker.DockerClient, log: Callable[[str], None] = print,
               force: bool = False) -> str:
    """The debootstrap base image, built unless one with the same recipe exists."""
    recipe = base_recipe_hash()
    tag = f"storage-labs/debian-base:bookworm-{recipe}"
    if not force and image_recipe(client, tag) == recipe:
        log(f"base image {tag} is up to date")
        return tag
    for tool in ("debootstrap", "tar"):
        if shutil.which(tool) is None:
            raise ContainerError(f"{tool} is needed to build images: "
                                 f"`sudo apt-get install {tool}`")
    scratch = Path(tempfile.mkdtemp(prefix="storage-labs-rootfs-", dir="/var/tmp"))
    try:
        root = scratch / "root"
        log(f"step 1/3: debootstrap {BASE_RECIPE['suite']} ({BASE_RECIPE['variant']}) "
            f"from {DEBIAN_MIRROR}")
        _run(["debootstrap", f"--variant={BASE_RECIPE['variant']}",
              f"--arch={BASE_RECIPE['arch']}", BASE_RECIPE["suite"], str(root), DEBIAN_MIRROR])
        tarball = scratch / "root.tar"
        log("step 2/3: docker import of the root file system")
        _run(["tar", "--numeric-owner", "-C", str(root), "-cf", str(tarball), "."])
        repository, _, version = tag.partition(":")
        client.api.import_image(src=str(tarball), repository=repository, tag=version,
                                changes=[f"LABEL {RECIPE_LABEL}={recipe}",
                                         'CMD ["/bin/bash"]'])
    finally:
        # Safe: a scratch folder this function just created with mkdtemp.
        shutil.rmtree(scratch, ignore_errors=True)
    return tag


def build_postgres(client: docker.DockerClient | None = None,
                   log: Callable[[str], None] = print, force: bool = False) -> str:
    """Build storage-labs/postgres:15 unless an image of the same recipe exists."""
    client = client or engine(timeout_s=1800)
    recipe = postgres_recipe_hash()
    if not force and image_recipe(client, LOCAL_POSTGRES) == recipe:
        log(f"{LOCAL_POSTGRES} is up to date (recipe {recipe}); nothing to build")
        return LOCAL_POSTGRES
    base = build_base(client, log, force=force)
    log("step 3/3: docker build (installs postgresql-15 from Debian's mirror)")
    try:
        client.images.build(path=str(RECIPES_DIR / "postgres"), tag=LOCAL_POSTGRES,
                            buildargs={"BASE": base}, labels={RECIPE_LABEL: recipe},
                            rm=True, forcerm=True, pull=False)
    except docker.errors.BuildError as error:
        tail = [str(item.get("stream", "")).strip() for item in error.build_log][-5:]
        raise ContainerError(f"building {LOCAL_POSTGRES} failed: {error.msg} "
                             f"({' | '.join(t for t in tail if t)})") from None
    return LOCAL_POSTGRES


def build_from_recipe(client: docker.DockerClient, folder: Path, tag: str,
                      log: Callable[[str], None] = print, force: bool = False,
                      what: str = "") -> str:
    """`docker build` of a recipe folder on the base image, unless it is up to date."""
    recipe = recipe_hash(folder)
    if not force and image_recipe(client, tag) == recipe:
        log(f"{tag} is up to date (recipe {recipe}); nothing to build")
        return tag
    base = build_base(client, log, force=force)
    log(f"step 3/3: docker build of {tag}" + (f" ({what})" if what else ""))
    try:
        client.images.build(path=str(folder), tag=tag, buildargs={"BASE": base},
                            labels={RECIPE_LABEL: recipe}, rm=True, forcerm=True, pull=False)
    except docker.errors.BuildError as error:
        tail = [str(item.get("stream", "")).strip() for item in error.build_log][-5:]
        raise ContainerError(f"building {tag} failed: {error.msg} "
                             f"({' | '.join(t for t in tail if t)})") from None
    return tag


def build_mariadb(client: docker.DockerClient | None = None,
                  log: Callable[[str], None] = print, force: bool = False) -> str:
    """Build storage-labs/mariadb:10.11 (mariadb-server and sysbench from Debian bookworm)."""
    return build_from_recipe(client or engine(timeout_s=1800), INFRA_RECIPES_DIR / "mariadb",
                             LOCAL_MARIADB, log, force,
                             "installs mariadb-server 10.11 and sysbench from Debian's mirror")


def choose_postgres_image(client: docker.DockerClient, flag: str | None) -> ImageChoice:
    """The image a lab uses: the flag, else the local build, else the official image."""
    if flag:
        choice = ImageChoice(flag, "flag")
    elif image_recipe(client, LOCAL_POSTGRES) is not None:
        choice = ImageChoice(LOCAL_POSTGRES, "local build")
    else:
        choice = ImageChoice(OFFICIAL_POSTGRES, "official")
    if image_recipe(client, choice.tag) is None:
        raise ContainerError(
            f"{choice.describe()} is not on this engine: build the local one with "
            f"`python -m labs images build postgres`, or `docker pull {choice.tag}`")
    return choice


def image_digest(client: docker.DockerClient, tag: str) -> str:
    return client.images.get(tag).id


def save_image(client: docker.DockerClient, tag: str, path: Path) -> Path:
    """Write an image to a tar file (`docker save`), to load on an engine that cannot build."""
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    with open(partial, "wb") as out:
        for chunk in client.images.get(tag).save(named=True):
            out.write(chunk)
    partial.rename(path)  # a half-written tar never carries the final name
    return path


def load_image(client: docker.DockerClient, path: Path) -> list[str]:
    """Load images from a `docker save` tar file; returns their tags."""
    with open(path, "rb") as tar:
        images = client.images.load(tar.read())
    return [tag for image in images for tag in image.tags]


def _run(command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        raise ContainerError(f"`{' '.join(command[:3])} ...` failed with exit "
                             f"{result.returncode}: {tail[0]}")


# ---- `python -m labs images ...` -------------------------------------------------------

BUILDERS = {"postgres": build_postgres, "mariadb": build_mariadb}


def add_arguments(parser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    actions.required = True
    build = actions.add_parser("build", help="build a local image from Debian packages")
    build.add_argument("image", help=f"which image: {', '.join(BUILDERS)}")
    build.add_argument("--force", action="store_true", help="rebuild even if up to date")
    save = actions.add_parser("save", help="write an image to a tar file (docker save)")
    save.add_argument("image")
    save.add_argument("path", type=Path)
    load = actions.add_parser("load", help="load images from a tar file (docker load)")
    load.add_argument("path", type=Path)


def main(args) -> int:
    if args.action == "build":
        if args.image not in BUILDERS:
            raise UsageError(f"unknown image {args.image!r}; known: {', '.join(BUILDERS)}")
        print(f"python -m labs images build {args.image}" + (" --force" if args.force else ""),
              flush=True)
        started = time.monotonic()
        tag = BUILDERS[args.image](engine(timeout_s=1800), force=args.force)
        print(f"{tag} ready after {time.monotonic() - started:.1f} s")
        return 0
    client = engine(timeout_s=1800)
    if args.action == "save":
        if image_recipe(client, args.image) is None:
            raise UsageError(f"image {args.image} is not on this engine")
        print(f"saved {args.image} to {save_image(client, args.image, args.path)}")
        return 0
    if not args.path.is_file():
        raise UsageError(f"{args.path}: no such file")
    print(f"loaded {', '.join(load_image(client, args.path))}")
    return 0
