"""Where the labs keep their state, configuration and caches on the machine that runs them.

    state_dir()      journals, VM folders, work files   $LABS_STATE_DIR, else
                     $XDG_STATE_HOME/storage-labs (~/.local/state/storage-labs)
    config_dir()     the inventory and the per-install SSH keys
                     $XDG_CONFIG_HOME/storage-labs (~/.config/storage-labs)
    cache_dir()      VM images                          $XDG_CACHE_HOME/storage-labs
    command_marker() the tag every lab command carries, so `clean` can find orphans

Everything else in labs.infra builds on these; this module imports nothing of the project.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def state_dir() -> Path:
    base = os.environ.get("LABS_STATE_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(xdg) / "storage-labs"


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "storage-labs"


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "storage-labs"


def command_marker() -> str:
    """A tag carried by every command this state dir runs, so `clean` can wait for orphans.

    If the lab process dies while a command runs, the command keeps running; `clean` waits
    until no process carrying this tag is left before it tears anything down. Containers
    carry it too (their owner label), so one state dir never touches another's containers.
    """
    digest = hashlib.sha256(str(state_dir().resolve()).encode()).hexdigest()[:12]
    return f"storage-labs-{digest}"
