"""Moving a recorded run between machines: one file per run, with a checksum manifest.

    report = export_run(run, Path("alice.tar.gz"), participant="alice", personal=local_personal())
    with ImportBatch() as batch:
        exports = [batch.read(path) for path in files]      # every check; nothing written
        placed = place(exports, destination)                 # all of them, or none

An export file is a gzip-compressed tar archive:

    MANIFEST.json          format, lab, run id, participant label, what was removed, and the
                           SHA-256 and size of every file below (plus one digest of them all)
    run/run.json, run/results.csv, run/raw/...    the run; names and addresses removed
                                                   (labs.privacy) unless the participant asked

It is written to a temporary name and renamed, so a half-written export never exists, and it
is byte-for-byte reproducible (fixed order, times and owners). Reading one checks everything
before anything is written: the compressed stream ends where it should (a truncated file is
refused), every member is a plain file inside run/, every file is in the manifest with its
checksum and size and nothing else is there, and the run inside loads as a recorded run
(labs.records). A refusal is one line naming the file and the reason. Placing runs writes
each into a hidden staging folder and renames it; if one fails, those already placed are
removed again, so an import is never half done.
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import tarfile
import tempfile
import uuid
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labs.errors import LabError, UsageError
from labs.privacy import Personal, has_private_key, scrub_host_facts
from labs.records import (
    RUN_ID_PATTERN,
    STAGING_PREFIX,
    RecordedRun,
    RecordError,
    load_run,
)

FORMAT = "storage-labs run export"
FORMAT_VERSION = 1
MANIFEST = "MANIFEST.json"
IMPORTED = "imported.json"  # the manifest, kept beside a run that was imported
RUN_DIR = "run"
LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$")
LAB_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
MAX_TOTAL_BYTES = 4 * 2**30  # far above any run; stops a "zip bomb" filling the disk
MAX_FILES = 100_000
CHUNK_BYTES = 1 << 20


class ExportRefused(UsageError):
    """An export file that will not be imported: the file and the reason, in one line."""

    def __init__(self, path: Path | str, reason: str):
        self.path, self.reason = str(path), reason
        super().__init__(f"{path}: {reason}")


def check_label(label: str, what: str = "--label") -> str:
    if not LABEL.match(label or ""):
        raise UsageError(f"{what} {label!r}: use 1-40 letters, digits, '.', '_' or '-', "
                         "starting with a letter or digit")
    return label


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def run_digest(files: dict[str, dict[str, Any]]) -> str:
    """One digest of a run's files (names, sizes and checksums): equal runs, equal digests."""
    canonical = json.dumps({name: [entry["sha256"], entry["bytes"]]
                            for name, entry in sorted(files.items())}, sort_keys=True)
    return _sha256(canonical.encode())


# ------------------------------------------------------------------------------------------
# Export
# ------------------------------------------------------------------------------------------

@dataclass
class ExportReport:
    path: Path
    lab: str
    run_id: str
    participant: str
    size_bytes: int
    files: int
    removed_facts: list[str] = field(default_factory=list)
    replacements: dict[str, int] = field(default_factory=dict)


def _run_files(run: RecordedRun) -> list[Path]:
    files = []
    for path in sorted(run.path.rglob("*")):
        relative = path.relative_to(run.path)
        if relative.parts[0] == IMPORTED or any(p.startswith(STAGING_PREFIX)
                                                for p in relative.parts):
            continue
        if path.is_symlink() or not (path.is_file() or path.is_dir()):
            raise LabError(f"{path}: not a plain file; a recorded run holds only files")
        if path.is_file():
            files.append(path)
    return files


def _redacted(name: str, data: bytes, personal: Personal | None) -> tuple[bytes, int]:
    """A file's content as it leaves the machine, and how many strings were replaced."""
    if personal is None:
        return data, 0
    if name.endswith(".gz"):
        try:
            inner = gzip.decompress(data)
        except (OSError, EOFError, zlib.error):
            inner = None
        if inner is not None:
            changed, count = _redacted(name.removesuffix(".gz"), inner, personal)
            return (gzip.compress(changed, mtime=0) if count else data), count
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        kind = personal.found_in(data)
        if kind:
            raise LabError(f"{name}: binary data holds this machine's {kind}, which cannot "
                           "be removed; export with --keep-host-identity to send it as it is"
                           ) from None
        return data, 0
    text, count = personal.redact(text)
    return text.encode("utf-8"), count


def export_run(run: RecordedRun, target: Path, *, participant: str,
               personal: Personal | None) -> ExportReport:
    """Write `run` to `target` as one export file; `personal=None` keeps names and addresses."""
    check_label(participant)
    contents: dict[str, bytes] = {}
    report = ExportReport(target, run.lab, run.run_id, participant, 0, 0)
    for path in _run_files(run):
        name = path.relative_to(run.path).as_posix()
        data = path.read_bytes()
        if name == "run.json" and personal is not None:
            meta = json.loads(data)
            meta["host"], report.removed_facts = scrub_host_facts(meta["host"])
            data = (json.dumps(meta, indent=2, sort_keys=True) + "\n").encode()
        data, count = _redacted(name, data, personal)
        if has_private_key(data) or (name.endswith(".gz") and has_private_key(
                gzip.decompress(data))):
            raise LabError(f"{path}: holds a private key; a run file must never carry one")
        if count:
            report.replacements[name] = count
        contents[f"{RUN_DIR}/{name}"] = data
    meta = json.loads(contents[f"{RUN_DIR}/run.json"])
    report.run_id = meta["run_id"]  # changes only if the id itself held a host name
    with tempfile.TemporaryDirectory(prefix="labs-export-") as scratch:
        # The export must itself be a valid run: check it as an import would.
        folder = Path(scratch) / run.lab / report.run_id
        for name, data in contents.items():
            (folder / name.removeprefix(RUN_DIR + "/")).parent.mkdir(parents=True, exist_ok=True)
            (folder / name.removeprefix(RUN_DIR + "/")).write_bytes(data)
        try:
            load_run(folder)
        except RecordError as error:
            raise LabError(f"export of {run.run_id} would not be a valid run: {error}") from None
    files = {name: {"sha256": _sha256(data), "bytes": len(data)}
             for name, data in sorted(contents.items())}
    manifest = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "lab": run.lab,
        "run_id": report.run_id, "participant": participant,
        "host_identity": "kept, as asked at export" if personal is None else "removed",
        "removed_host_facts": report.removed_facts, "replacements": report.replacements,
        "files": files, "run_sha256": run_digest(files),
    }
    when = int(dt.datetime.fromisoformat(meta["finished_at"]).timestamp())
    report.size_bytes = _write_archive(target, manifest, contents, when)
    report.files = len(contents)
    return report


def _write_archive(target: Path, manifest: dict, contents: dict[str, bytes], when: int) -> int:
    target = Path(target)
    if target.is_dir():
        raise UsageError(f"-o {target}: is a folder; name the file to write")
    if not target.parent.is_dir():
        raise UsageError(f"-o {target}: folder {target.parent} does not exist")
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}-{uuid.uuid4().hex[:6]}")
    members = {MANIFEST: (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()}
    members.update(contents)
    try:
        with open(partial, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw,
                                                       mtime=0, compresslevel=6) as zipped, \
                tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as archive:
            for name, data in members.items():
                info = tarfile.TarInfo(name)
                info.size, info.mtime, info.mode = len(data), when, 0o644
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                archive.addfile(info, io.BytesIO(data))
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return target.stat().st_size


# ------------------------------------------------------------------------------------------
# Import: read and check (nothing written outside a private temporary folder)
# ------------------------------------------------------------------------------------------

@dataclass
class RunExport:
    """An export file that passed every check, unpacked into a private temporary folder."""

    source: Path
    manifest: dict[str, Any]
    run: RecordedRun

    @property
    def lab(self) -> str:
        return self.manifest["lab"]

    @property
    def run_id(self) -> str:
        return self.manifest["run_id"]

    @property
    def participant(self) -> str:
        return self.manifest["participant"]

    @property
    def digest(self) -> str:
        return self.manifest["run_sha256"]


class ImportBatch:
    """Reads export files into one private temporary folder, removed on leaving the block."""

    def __enter__(self) -> ImportBatch:
        self._scratch = tempfile.TemporaryDirectory(prefix="labs-import-")
        self.root = Path(self._scratch.name)
        self.count = 0
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._scratch.cleanup()

    def read(self, path: Path) -> RunExport:
        """Check `path` completely; ExportRefused (one line) on the first defect."""
        self.count += 1
        return read_export(Path(path), self.root / str(self.count))


def read_export(path: Path, scratch: Path) -> RunExport:
    if not path.exists():
        raise ExportRefused(path, "no such file")
    if not path.is_file():
        raise ExportRefused(path, "not a file")
    _check_stream(path)
    unpacked = scratch / RUN_DIR
    found, manifest_bytes = _unpack(path, scratch)
    manifest = _check_manifest(path, manifest_bytes)
    listed = manifest["files"]
    _check_files_match_manifest(path, listed, found)
    if run_digest(listed) != manifest["run_sha256"]:
        raise ExportRefused(path, "MANIFEST.json: 'run_sha256' does not match its files")
    folder = scratch / manifest["lab"] / manifest["run_id"]
    folder.parent.mkdir(parents=True)
    unpacked.rename(folder)
    try:
        run = load_run(folder)
    except RecordError as error:
        reason = str(error).replace(str(folder) + "/", f"{RUN_DIR}/").replace(str(folder),
                                                                           RUN_DIR)
        raise ExportRefused(path, reason) from None
    return RunExport(path, manifest, run)


def _unpack(path: Path, scratch: Path) -> tuple[dict[str, dict[str, Any]], bytes | None]:
    """Every file of the archive written under `scratch`, with its checksum and size; and
    the manifest's bytes (None if it has none)."""
    found: dict[str, dict[str, Any]] = {}
    manifest_bytes = None
    try:
        with tarfile.open(path, mode="r:gz") as archive:
            for member in archive:
                name = _member_name(path, member)
                if member.isdir():
                    continue
                if name in found or (name == MANIFEST and manifest_bytes is not None):
                    raise ExportRefused(path, f"{name} is in the archive twice")
                if len(found) >= MAX_FILES:
                    raise ExportRefused(path, f"more than {MAX_FILES} files")
                data = archive.extractfile(member).read()
                if name == MANIFEST:
                    manifest_bytes = data
                    continue
                target = scratch / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                found[name] = {"sha256": _sha256(data), "bytes": len(data)}
    except (tarfile.TarError, EOFError, zlib.error, OSError) as error:
        raise ExportRefused(path, f"not a readable run export ({_first_line(error)})") from None
    return found, manifest_bytes


def _check_files_match_manifest(path: Path, listed: dict[str, dict[str, Any]],
                                found: dict[str, dict[str, Any]]) -> None:
    for name in sorted(set(listed) - set(found)):
        raise ExportRefused(path, f"{name} is listed in the manifest but missing (truncated?)")
    for name in sorted(set(found) - set(listed)):
        raise ExportRefused(path, f"{name} is not in the manifest (added after export?)")
    for name in sorted(listed):
        if found[name] != {"sha256": listed[name]["sha256"], "bytes": listed[name]["bytes"]}:
            raise ExportRefused(path, f"{name}: its checksum does not match the manifest "
                                      "(changed after export)")


def _check_stream(path: Path) -> None:
    """Decompress the whole file once: a truncated or damaged file fails here."""
    total = 0
    try:
        with gzip.open(path, "rb") as stream:
            while chunk := stream.read(CHUNK_BYTES):
                total += len(chunk)
                if total > MAX_TOTAL_BYTES:
                    raise ExportRefused(path, f"unpacks to more than {MAX_TOTAL_BYTES} bytes")
    except EOFError:
        raise ExportRefused(path, "truncated: the compressed data ends early") from None
    except (gzip.BadGzipFile, zlib.error, OSError) as error:
        raise ExportRefused(path, f"not a run export ({_first_line(error)})") from None
    if total == 0:
        raise ExportRefused(path, "empty")


def _member_name(path: Path, member: tarfile.TarInfo) -> str:
    name = member.name
    parts = Path(name).parts
    if name.startswith("/") or ".." in parts or "\\" in name or not parts:
        raise ExportRefused(path, f"member {name!r} points outside the run")
    if not (member.isfile() or member.isdir()):
        raise ExportRefused(path, f"member {name!r} is not a plain file (a link or device)")
    if name != MANIFEST and (parts[0] != RUN_DIR or (member.isfile() and len(parts) < 2)):
        raise ExportRefused(path, f"member {name!r} is neither the manifest nor part of run/")
    if member.isfile() and member.size > MAX_TOTAL_BYTES:
        raise ExportRefused(path, f"member {name!r} is too large")
    return Path(*parts).as_posix()


def _check_manifest(path: Path, data: bytes | None) -> dict[str, Any]:
    if data is None:
        raise ExportRefused(path, f"{MANIFEST} missing: not a run export")
    try:
        manifest = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ExportRefused(path, f"{MANIFEST}: not valid JSON") from None
    if not isinstance(manifest, dict):
        raise ExportRefused(path, f"{MANIFEST}: must hold a JSON object")
    if manifest.get("format") != FORMAT:
        raise ExportRefused(path, f"{MANIFEST}: 'format' is not {FORMAT!r}")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ExportRefused(path, f"{MANIFEST}: 'format_version' "
                                  f"{manifest.get('format_version')!r}; this project reads "
                                  f"{FORMAT_VERSION}")
    checks = {"lab": LAB_NAME, "run_id": RUN_ID_PATTERN, "participant": LABEL}
    for key, pattern in checks.items():
        if not isinstance(manifest.get(key), str) or not pattern.match(manifest[key]):
            raise ExportRefused(path, f"{MANIFEST}: '{key}' missing or not a valid name")
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        raise ExportRefused(path, f"{MANIFEST}: 'files' must list the run's files")
    for name, entry in files.items():
        valid = (isinstance(entry, dict) and isinstance(entry.get("sha256"), str)
                 and re.fullmatch(r"[0-9a-f]{64}", entry["sha256"]) is not None
                 and isinstance(entry.get("bytes"), int) and not isinstance(entry["bytes"], bool)
                 and entry["bytes"] >= 0)
        if not valid:
            raise ExportRefused(path, f"{MANIFEST}: entry {name!r} needs 'sha256' and 'bytes'")
    if not isinstance(manifest.get("run_sha256"), str):
        raise ExportRefused(path, f"{MANIFEST}: 'run_sha256' missing")
    return manifest


def _first_line(error: BaseException) -> str:
    return (str(error).splitlines() or [type(error).__name__])[0] or type(error).__name__


# ------------------------------------------------------------------------------------------
# Import: place (all or nothing)
# ------------------------------------------------------------------------------------------

def imported_digests(root: Path) -> dict[str, Path]:
    """Digest -> run folder, for every imported run under `root` (a class or data/runs)."""
    found = {}
    if root.is_dir():
        for marker in root.rglob(IMPORTED):
            try:
                found[json.loads(marker.read_text())["run_sha256"]] = marker.parent
            except (json.JSONDecodeError, KeyError, TypeError, UnicodeDecodeError, OSError):
                continue
    return found


def check_duplicates(exports: list[RunExport], destinations: list[Path],
                     known: dict[str, Path]) -> None:
    """Refuse a run that is already there, or twice in one import."""
    seen_digest: dict[str, RunExport] = {}
    seen_target: dict[Path, RunExport] = {}
    for export, target in zip(exports, destinations, strict=True):
        if target.exists():
            raise ExportRefused(export.source, f"duplicate: {export.lab}/{export.run_id} is "
                                               f"already there ({target})")
        if export.digest in known:
            raise ExportRefused(export.source, f"duplicate: the same run is already there "
                                               f"({known[export.digest]})")
        earlier = seen_digest.get(export.digest) or seen_target.get(target)
        if earlier is not None:
            raise ExportRefused(export.source, f"duplicate: the same run as {earlier.source}")
        seen_digest[export.digest] = export
        seen_target[target] = export


def place(exports: list[RunExport], destinations: list[Path]) -> list[Path]:
    """Put each checked run at its destination folder: all of them, or none."""
    placed: list[Path] = []
    made_dirs: list[Path] = []
    try:
        for export, final in zip(exports, destinations, strict=True):
            for parent in reversed(final.parents):
                if not parent.exists():
                    parent.mkdir()
                    made_dirs.append(parent)
            staging = final.parent / (f"{STAGING_PREFIX}{final.name}-{os.getpid()}-"
                                      f"{uuid.uuid4().hex[:8]}")
            try:
                shutil.copytree(export.run.path, staging)
                record = {**export.manifest, "imported_from": export.source.name,
                          "imported_at": dt.datetime.now(dt.UTC).replace(
                              microsecond=0).isoformat()}
                (staging / IMPORTED).write_text(json.dumps(record, indent=2, sort_keys=True)
                                                + "\n")
                os.rename(staging, final)  # atomic: the run appears whole or not at all
            except BaseException:
                # Safe: the hidden staging folder this import has just made.
                shutil.rmtree(staging, ignore_errors=True)
                raise
            placed.append(final)
    except BaseException:
        for folder in reversed(placed):
            # Safe: a run folder this very import created a moment ago.
            shutil.rmtree(folder, ignore_errors=True)
        for folder in reversed(made_dirs):
            try:
                folder.rmdir()  # only if still empty
            except OSError:
                pass
        raise
    return placed
