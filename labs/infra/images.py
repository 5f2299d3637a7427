"""Container images for the labs, built from Debian's packages when no registry is reachable.

A reader with internet can use official images. Where nothing can be pulled,
`python -m labs images build NAME` builds an equivalent image:

1. `debootstrap --variant=minbase bookworm` into a journaled scratch folder;
2. `docker import` of that folder as a base image;
3. a `docker build` on top, from the recipe folder `labs/infra/image_recipes/NAME/`, that
   installs the engine from Debian's mirror, with an entrypoint that behaves like the
   official image's for what the labs use. A recipe whose engine is not a Debian package
   names a host-side `prepare` step (labs.infra.image_prepare): the recipe folder is copied
   into a journaled scratch build context, the step fetches the engine's files into it
   (Maven Central jars, a PyPI wheel) and checks them against the recipe's sha256 list,
   and `docker build` runs on that context.

Both images carry the hash of their recipe as a label; a build is skipped when an image with
the same recipe hash exists, so an image is rebuilt only when its recipe changes. Images are
built on this machine's engine; `copy_to` moves one to a lab host's engine (a lab VM) by
`docker save` / `docker load`, streamed over the host's SSH connection.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors

from labs.errors import UsageError
from labs.infra import image_prepare
from labs.infra.containers import ContainerError, local_engine
from labs.infra.scratch import scratch_folder, tree_in_memory
from labs.progress import Progress

RECIPES_DIR = Path(__file__).resolve().parent / "image_recipes"
RECIPE_LABEL = "storage-labs.recipe"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
BASE_RECIPE = {"suite": "bookworm", "variant": "minbase", "mirror": DEBIAN_MIRROR,
               "arch": "amd64"}


@dataclass(frozen=True)
class ImageRecipe:
    name: str  # what `python -m labs images build NAME` calls it
    tag: str  # the local build
    official: str | None  # the image a reader with a registry may use instead
    description: str
    # Fills the build context (a copy of the recipe folder) on this machine before
    # `docker build`; None: the folder is the context as it is.
    prepare: Callable[[Path, Progress], None] | None = None

    @property
    def folder(self) -> Path:
        return RECIPES_DIR / self.name


RECIPES: dict[str, ImageRecipe] = {
    "postgres": ImageRecipe("postgres", "storage-labs/postgres:15", "postgres:15",
                            "PostgreSQL 15 with contrib (pgbench, pageinspect) from Debian 12"),
    # MariaDB 10.11 with sysbench beside it, so sysbench reaches the server over its unix
    # socket as root (no password exists anywhere); no official image bundles both.
    "mariadb": ImageRecipe("mariadb", "storage-labs/mariadb:10.11", None,
                           "MariaDB 10.11 and sysbench 1.0.20 from Debian 12"),
    # No official fallback: the labs set the node up through this image's entrypoint.
    "cassandra": ImageRecipe("cassandra", "storage-labs/cassandra:5.0.9", None,
                             "Apache Cassandra 5.0.9: Maven Central jars on Debian's OpenJDK 17",
                             prepare=image_prepare.fetch_maven_jars),
    "rocksdb": ImageRecipe("rocksdb", "storage-labs/rocksdb:0.3.29", None,
                           "RocksDB (rocksdict 0.3.29 from PyPI) behind a small HTTP server, "
                           "on Debian's Python 3.11", prepare=image_prepare.fetch_wheels),
}


@dataclass(frozen=True)
class ImageChoice:
    tag: str
    source: str  # "flag", "local build" or "official"

    def describe(self) -> str:
        return f"image {self.tag} ({self.source})"


def recipe_named(name: str) -> ImageRecipe:
    if name not in RECIPES:
        raise UsageError(f"unknown image {name!r}; known: {', '.join(RECIPES)}")
    return RECIPES[name]


def _hash(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def base_recipe_hash() -> str:
    return _hash({"base": BASE_RECIPE})


def recipe_hash(recipe: ImageRecipe) -> str:
    files = {p.name: p.read_text() for p in sorted(recipe.folder.iterdir()) if p.is_file()}
    return _hash({"base": base_recipe_hash(), "files": files})


def image_recipe(client: docker.DockerClient, tag: str) -> str | None:
    """The recipe hash an image was built from ('' if not ours), or None if it is absent."""
    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None
    return (image.labels or {}).get(RECIPE_LABEL, "")


def _run(command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        raise ContainerError(f"`{' '.join(command[:3])} ...` failed with exit "
                             f"{result.returncode}: {tail[0]}")


def build_base(client: docker.DockerClient, progress: Progress, force: bool = False) -> str:
    """The debootstrap base image, built unless one with the same recipe exists."""
    recipe = base_recipe_hash()
    tag = f"storage-labs/debian-base:bookworm-{recipe}"
    if not force and image_recipe(client, tag) == recipe:
        progress.detail(f"base image {tag} is up to date")
        return tag
    for tool in ("debootstrap", "tar"):
        if shutil.which(tool) is None:
            raise ContainerError(f"{tool} is needed to build images: "
                                 f"`sudo apt-get install {tool}`")
    # Journaled (labs.infra.scratch): a killed build's tree and mounts are cleaned later.
    with scratch_folder(Path("/var/tmp/storage-labs-images"), "rootfs-") as tmp:
        root = tmp / "root"
        tree_in_memory(root)
        progress.step(f"debootstrap {BASE_RECIPE['suite']} ({BASE_RECIPE['variant']}) "
                      f"from {DEBIAN_MIRROR}")
        _run(["debootstrap", f"--variant={BASE_RECIPE['variant']}",
              f"--arch={BASE_RECIPE['arch']}", BASE_RECIPE["suite"], str(root), DEBIAN_MIRROR])
        tarball = tmp / "root.tar"
        progress.step("docker import of the root file system")
        _run(["tar", "--numeric-owner", "-C", str(root), "-cf", str(tarball), "."])
        repository, _, version = tag.partition(":")
        client.api.import_image(src=str(tarball), repository=repository, tag=version,
                                changes=[f"LABEL {RECIPE_LABEL}={recipe}",
                                         'CMD ["/bin/bash"]'])
    return tag


def build(name: str, client: docker.DockerClient | None = None,
          progress: Progress | None = None, force: bool = False) -> str:
    """Build the local image NAME unless an image of the same recipe exists; its tag."""
    recipe = recipe_named(name)
    client = client or local_engine(timeout_s=1800)
    progress = progress or Progress(f"image {name}", 3)
    digest = recipe_hash(recipe)
    if not force and image_recipe(client, recipe.tag) == digest:
        progress.say(f"{recipe.tag} is up to date (recipe {digest}); nothing to build")
        return recipe.tag
    base = build_base(client, progress, force=force)
    build_recipe_image(client, recipe, base, recipe.tag, progress)
    return recipe.tag


def build_recipe_image(client: docker.DockerClient, recipe: ImageRecipe, base: str, tag: str,
                       progress: Progress, nocache: bool = False) -> None:
    """`docker build` of a recipe on `base` as `tag`, after its host-side step if any."""
    if recipe.prepare is None:
        _docker_build(client, recipe, recipe.folder, base, tag, progress, nocache)
        return
    # Journaled (labs.infra.scratch): a killed build's context is cleaned later.
    with scratch_folder(Path("/var/tmp/storage-labs-images"), f"{recipe.name}-context-") as tmp:
        context = tmp / "context"
        shutil.copytree(recipe.folder, context)
        recipe.prepare(context, progress)
        _docker_build(client, recipe, context, base, tag, progress, nocache)


def _docker_build(client: docker.DockerClient, recipe: ImageRecipe, context: Path, base: str,
                  tag: str, progress: Progress, nocache: bool) -> None:
    progress.step(f"docker build of {tag} ({recipe.description})")
    try:
        client.images.build(path=str(context), tag=tag, buildargs={"BASE": base},
                            labels={RECIPE_LABEL: recipe_hash(recipe)}, rm=True, forcerm=True,
                            pull=False, nocache=nocache)
    except docker.errors.BuildError as error:
        tail = [str(item.get("stream", "")).strip() for item in error.build_log][-5:]
        raise ContainerError(f"building {tag} failed: {error.msg} "
                             f"({' | '.join(t for t in tail if t)})") from None


def choose_image(client: docker.DockerClient, name: str, flag: str | None) -> ImageChoice:
    """The image a lab uses: the flag, else the local build, else the official image."""
    recipe = recipe_named(name)
    if flag:
        choice = ImageChoice(flag, "flag")
    elif image_recipe(client, recipe.tag) is not None or recipe.official is None:
        choice = ImageChoice(recipe.tag, "local build")
    else:
        choice = ImageChoice(recipe.official, "official")
    if image_recipe(client, choice.tag) is None:
        raise ContainerError(
            f"{choice.describe()} is not on this engine: build the local one with "
            f"`sudo .venv/bin/python -m labs images build {name}`"
            + (f", or `docker pull {recipe.official}`" if recipe.official else ""))
    return choice


def ensure_image(engine: docker.DockerClient, engine_is_local: bool, name: str,
                 flag: str | None, progress: Progress | None = None) -> ImageChoice:
    """The image a lab uses on a lab host's engine, copied there from this machine if needed.

    Images are built on this machine (`python -m labs images build NAME`); a lab VM or an
    SSH host gets this machine's copy, so both run the very same image.
    """
    if engine_is_local:
        return choose_image(engine, name, flag)
    try:
        choice = choose_image(local_engine(timeout_s=1800), name, flag)
    except ContainerError:
        return choose_image(engine, name, flag)  # the lab host may have it on its own
    copy_to(engine, choice.tag, progress=progress)
    return choice


def image_digest(client: docker.DockerClient, tag: str) -> str:
    return client.images.get(tag).id


def use_image(engine: docker.DockerClient, engine_is_local: bool, name: str, flag: str | None,
              progress: Progress, add_tool_version) -> ImageChoice:
    """ensure_image, said on the progress line and written into the run (image with its
    digest, and the engine's version) through `add_tool_version(name, value)`."""
    choice = ensure_image(engine, engine_is_local, name, flag, progress)
    progress.say(f"using {choice.describe()}")
    add_tool_version("image", f"{choice.tag} ({choice.source}) {image_digest(engine, choice.tag)}")
    add_tool_version("docker", engine.version().get("Version", "unknown"))
    return choice


def copy_to(target: docker.DockerClient, tag: str, source: docker.DockerClient | None = None,
            progress: Progress | None = None) -> bool:
    """Make sure `target` (a lab host's engine) has the image; True if it had to be copied.

    The image goes over as a `docker save` stream, so the lab host needs no registry and
    no build tools. Images are compared by id, so a rebuilt image is copied again.
    """
    source = source or local_engine(timeout_s=1800)
    try:
        wanted = source.images.get(tag)
    except docker.errors.ImageNotFound:
        raise ContainerError(f"image {tag} is not on this machine's engine either: build it "
                             "with `sudo .venv/bin/python -m labs images build NAME`") from None
    try:
        if target.images.get(tag).id == wanted.id:
            return False
    except docker.errors.ImageNotFound:
        pass
    if progress:
        progress.detail(f"copying image {tag} to the lab host (docker save | docker load)")
    target.images.load(b"".join(wanted.save(named=True)))
    return True


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
        head = tar.read(512)
        # A tar archive carries "ustar" at byte 257 of its first header.
        if len(head) < 512 or head[257:262] != b"ustar":
            raise UsageError(f"{path}: not an image archive (a `docker save` tar file)")
        tar.seek(0)
        try:
            images = client.images.load(tar.read())
        except docker.errors.APIError as error:
            raise UsageError(f"{path}: the engine refused it as an image archive "
                             f"({str(error).strip().splitlines()[0]})") from None
    return [tag for image in images for tag in image.tags]
