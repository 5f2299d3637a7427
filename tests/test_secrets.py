"""Secrets and exposure: what the labs keep private, and where their services listen.

- The per-install SSH keys are private files (mode 0600), never inside the repository, and
  their contents appear in no recorded run.
- No recorded run holds a private key, a password assignment, or the machine's own host
  name or user name beyond what run.json's host facts say on purpose.
- Services bind to 127.0.0.1: the code publishes container ports and the VM's SSH forward on
  loopback only, and `make serve` serves on 127.0.0.1.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT

from labs.infra.vm.image import ensure_keys

RUNS = PROJECT_ROOT / "data" / "runs"
SECRET_PATTERNS = [
    re.compile(rb"-----BEGIN [A-Z ]*PRIVATE" + rb" KEY-----"),
    re.compile(rb"(?i)\b(password|passwd|secret)\s*[=:]\s*\S+"),
    re.compile(rb"(?i)POSTGRES_PASSWORD=\S+"),
]


def recorded_files() -> list[Path]:
    return [p for p in RUNS.rglob("*") if p.is_file()]


def test_recorded_runs_exist_to_check():
    assert len(recorded_files()) > 20


@pytest.mark.parametrize("pattern", SECRET_PATTERNS, ids=lambda p: p.pattern[:30].decode())
def test_no_recorded_run_holds_a_secret(pattern):
    import gzip

    for path in recorded_files():
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        assert not pattern.search(data), f"{path.relative_to(PROJECT_ROOT)} matches {pattern}"


def test_the_install_keys_are_private_and_never_in_a_run_or_the_repository():
    keys = ensure_keys()
    for private in (keys.client_key, keys.host_key):
        assert private.stat().st_mode & 0o777 == 0o600
        assert PROJECT_ROOT not in private.resolve().parents
    secret_lines = [line for line in keys.client_key.read_bytes().splitlines()
                    if line and not line.startswith(b"-----")]
    for path in recorded_files():
        data = path.read_bytes()
        assert not any(line in data for line in secret_lines[:3]), path
    tracked = [p for p in PROJECT_ROOT.rglob("*") if p.is_file() and ".venv" not in p.parts
               and ".git" not in p.parts and "_build" not in p.parts]
    for path in tracked:
        # Spelled in two pieces so this very file does not match.
        assert b"PRIVATE" + b" KEY-----" not in path.read_bytes(), path


def test_services_bind_to_loopback_only():
    # Code that runs inside a container (image_recipes/) listens on the container's own
    # interfaces; what reaches it is the port published on 127.0.0.1, checked below.
    code = "\n".join(p.read_text() for p in (PROJECT_ROOT / "labs").rglob("*.py")
                     if "image_recipes" not in p.parts)
    # No listening address of "every interface" (labs/privacy.py names 0.0.0.0/32 as an address
    # to strip from runs: a network, not a listening address).
    assert not re.search(r"[\"']0\.0\.0\.0[\"']", code)
    assert '("127.0.0.1", outside)' in code  # container ports (labs/infra/containers.py)
    assert "hostfwd=tcp:127.0.0.1:" in code  # the VM's SSH forward (labs/infra/vm)
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    serve = makefile[makefile.index("serve:"):]
    assert "--bind 127.0.0.1" in serve.split("\n\n")[0] or "127.0.0.1" in serve.split("\n\n")[0]
