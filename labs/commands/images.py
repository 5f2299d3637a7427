"""`python -m labs images build|save|load|list`: the labs' container images."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from labs.errors import UsageError
from labs.infra import images
from labs.infra.containers import local_engine
from labs.progress import Progress

HELP = "build, save or load the labs' container images"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    actions.required = True
    actions.add_parser("list", help="the images the labs use, and whether each is built")
    build = actions.add_parser("build", help="build a local image from Debian packages")
    build.add_argument("image", help=f"which image: {', '.join(images.RECIPES)}")
    build.add_argument("--force", action="store_true", help="rebuild even if up to date")
    save = actions.add_parser("save", help="write an image to a tar file (docker save)")
    save.add_argument("image")
    save.add_argument("path", type=Path)
    load = actions.add_parser("load", help="load images from a tar file (docker load)")
    load.add_argument("path", type=Path)


def main(args: argparse.Namespace) -> int:
    if args.action == "build":
        recipe = images.recipe_named(args.image)
        print(f"python -m labs images build {args.image}" + (" --force" if args.force else ""),
              flush=True)
        started = time.monotonic()
        progress = Progress(f"image {recipe.name}", 3)
        tag = images.build(recipe.name, local_engine(timeout_s=1800), progress,
                           force=args.force)
        progress.close()
        print(f"{tag} ready after {time.monotonic() - started:.1f} s")
        return 0
    if args.action == "load" and not args.path.is_file():
        raise UsageError(f"{args.path}: " + ("not a file" if args.path.exists()
                                             else "no such file"))
    client = local_engine(timeout_s=1800)
    if args.action == "list":
        for recipe in images.RECIPES.values():
            have = images.image_recipe(client, recipe.tag)
            state = ("up to date" if have == images.recipe_hash(recipe) else
                     "built from an older recipe" if have is not None else "not built")
            print(f"{recipe.name:<10} {recipe.tag:<32} {state}: {recipe.description}")
        return 0
    if args.action == "save":
        if images.image_recipe(client, args.image) is None:
            raise UsageError(f"image {args.image} is not on this engine")
        print(f"saved {args.image} to {images.save_image(client, args.image, args.path)}")
        return 0
    print(f"loaded {', '.join(images.load_image(client, args.path))}")
    return 0
