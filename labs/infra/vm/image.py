"""The lab VM image: Debian 12 (bookworm) or 13 (trixie) from Debian's packages, via debootstrap.

API:
    image = build_image()                 # -> (Image, built_now, seconds); cached by recipe hash
    build_image(release="trixie")         # Debian 13 and its kernel instead of the default 12
    cached_image(release="bookworm")      # -> Image | None
    ensure_keys()                         # -> SSHKeys (per-install client key and VM host key)

The image lives in $XDG_CACHE_HOME/storage-labs/vm/<recipe hash>/ (~/.cache/...): a sparse
raw ext4 disk, the kernel and initrd taken out of it (QEMU boots them with -kernel/-initrd,
no bootloader), and build.json. The recipe hash covers the package list, the customisation
below, the Debian release, the image size and the SSH public keys, so changing any of them
builds a new image and nothing else does.

Keys are made once per install in $XDG_CONFIG_HOME/storage-labs/ssh/ (mode 0600, never in the
repository): the client key that logs in as root, and the VM's own host key, which we bake
into the image so the host key can be pinned instead of trusted on first use.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from labs.errors import LabError, UsageError
from labs.infra.paths import cache_dir, config_dir
from labs.infra.scratch import scratch_folder, tree_in_memory
from labs.progress import Progress

# Debian releases a lab VM can be built from (codename -> version); the first is the default.
RELEASES = {"bookworm": "12", "trixie": "13"}
DEFAULT_RELEASE = "bookworm"
SUITE = DEFAULT_RELEASE  # the default release's codename (older callers read SUITE)
IMAGE_SIZE_MIB = 8192
RECIPE_VERSION = 1

# package -> why the labs need it
PACKAGES: dict[str, str] = {
    "linux-image-amd64": "Debian's own kernel, with md, DRBD, dm and netem as modules",
    "systemd": "init", "systemd-sysv": "init as /sbin/init", "udev": "device nodes, /dev/md/*",
    "dbus": "systemd's bus for hostnamectl and friends",
    "openssh-server": "labs.hosts reaches the VM over SSH",
    "mdadm": "the write-mostly RAID1 lab", "drbd-utils": "the synchronous mirroring lab",
    "fio": "the storage benchmark", "xfsprogs": "mkfs.xfs", "e2fsprogs": "mkfs.ext4",
    "iproute2": "ip and tc (netem)", "kmod": "modprobe", "iputils-ping": "ping the pair peer",
    "util-linux": "losetup, mount", "procps": "pgrep for the journal's orphan check",
    "postgresql": "the torn-pages and power-loss labs", "postgresql-contrib": "pgbench",
    "mariadb-server": "the power-loss lab (InnoDB, run in the VM itself)",
    "sysbench": "a second benchmark", "docker.io": "containers for the PostgreSQL lab",
    "busybox-static": "a one-file container image, since no registry can be reached",
    "initramfs-tools": "the initrd that mounts the virtio root disk",
    "sudo": "a test logs in as a user with password-less sudo, as on a reader's SSH host",
}

# What a release lacks of the list above: Debian 13 folds pgbench and the contrib modules into
# its postgresql package and has no postgresql-contrib.
NOT_IN_RELEASE: dict[str, set[str]] = {"bookworm": set(), "trixie": {"postgresql-contrib"}}


def packages(release: str = DEFAULT_RELEASE) -> list[str]:
    """The packages the image of `release` installs (sorted)."""
    return sorted(set(PACKAGES) - NOT_IN_RELEASE[check_release(release)])


NETWORK_FILES = {
    # The user-mode (SSH) NIC: DHCP from QEMU's built-in server.
    "10-user.network": "[Match]\nMACAddress=52:54:00:10:00:01 52:54:00:10:00:02 "
                       "52:54:00:10:00:03 52:54:00:10:00:04\n\n[Network]\nDHCP=ipv4\n",
    **{f"20-lab-vm{i}.network": f"[Match]\nMACAddress=52:54:00:77:00:0{i}\n\n"
                                 f"[Network]\nAddress=10.77.0.{i}/24\n" for i in range(1, 5)},
}

SSHD_CONFIG = ("HostKey /etc/ssh/ssh_host_ed25519_key\nPasswordAuthentication no\n"
               "PermitRootLogin prohibit-password\nUseDNS no\n")

ENABLE_UNITS = ["systemd-networkd.service", "ssh.service"]
# Started on demand by the labs; at boot they would only slow TCG down.
DISABLE_UNITS = ["docker.service", "containerd.service", "postgresql.service", "mariadb.service",
                 "apt-daily.timer", "apt-daily-upgrade.timer", "e2scrub_all.timer",
                 "fstrim.timer", "mdmonitor.service", "mdcheck_start.timer",
                 "mdmonitor-oneshot.timer", "drbd.service", "man-db.timer"]


@dataclass(frozen=True)
class SSHKeys:
    client_key: Path
    client_pub: str
    host_key: Path
    host_pub: str


@dataclass(frozen=True)
class Image:
    directory: Path
    disk: Path
    kernel: Path
    initrd: Path
    recipe_hash: str
    build: dict


def mirror() -> str:
    return os.environ.get("LABS_DEBIAN_MIRROR", "http://deb.debian.org/debian")


def _keygen(path: Path, comment: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment,
                    "-f", str(path)], check=True, capture_output=True)
    path.chmod(0o600)


def ensure_keys() -> SSHKeys:
    """The per-install SSH keys, made on first use (private keys 0600)."""
    folder = config_dir() / "ssh"
    client, host = folder / "id_ed25519", folder / "vm_host_ed25519_key"
    lock_path = folder / ".lock"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not client.exists():
            _keygen(client, "storage-labs client")
        if not host.exists():
            _keygen(host, "storage-labs vm host key")
    return SSHKeys(client, Path(f"{client}.pub").read_text().strip(),
                   host, Path(f"{host}.pub").read_text().strip())


def check_release(release: str) -> str:
    """`release` if the lab VM image can be built from it, else a one-line UsageError."""
    if release not in RELEASES:
        raise UsageError(f"--release {release}: use one of {', '.join(RELEASES)}")
    return release


def recipe(keys: SSHKeys, release: str = DEFAULT_RELEASE) -> dict:
    return {"version": RECIPE_VERSION, "suite": check_release(release),
            "packages": packages(release),
            "size_mib": IMAGE_SIZE_MIB, "network": NETWORK_FILES, "sshd": SSHD_CONFIG,
            "enable": ENABLE_UNITS, "disable": DISABLE_UNITS,
            "client_pub": keys.client_pub, "host_pub": keys.host_pub}


def recipe_hash(keys: SSHKeys, release: str = DEFAULT_RELEASE) -> str:
    text = json.dumps(recipe(keys, release), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _image_at(directory: Path) -> Image | None:
    build_file = directory / "build.json"
    if not build_file.exists():
        return None
    build = json.loads(build_file.read_text())
    return Image(directory, directory / "disk.raw", directory / "vmlinuz",
                 directory / "initrd.img", build["recipe_hash"], build)


def cached_image(release: str = DEFAULT_RELEASE) -> Image | None:
    return _image_at(cache_dir() / "vm" / recipe_hash(ensure_keys(), release))


def _stream(command: list[str], progress: Progress, log_path: Path) -> None:
    """Run a build command, showing its latest line as progress; keep the log."""
    with open(log_path, "a") as log:
        log.write("$ " + " ".join(command) + "\n")
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, text=True)
        assert process.stdout is not None
        tail: list[str] = []
        for line in process.stdout:
            log.write(line)
            tail = (tail + [line.rstrip()])[-5:]
            progress.detail(line.strip(), transient=True)
        if process.wait() != 0:
            raise LabError(f"vm build: `{' '.join(command[:3])} ...` failed "
                           f"(exit {process.returncode}): {' | '.join(tail[-2:])} "
                           f"(full log: {log_path})")


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def customise(root: Path, keys: SSHKeys) -> None:
    """Turn the debootstrap tree into a lab VM: network, SSH, quiet boot."""
    _write(root / "etc/hostname", "labvm\n")
    _write(root / "etc/hosts", "127.0.0.1 localhost\n10.77.0.1 vm1\n10.77.0.2 vm2\n")
    _write(root / "etc/fstab", "/dev/vda / ext4 rw,errors=remount-ro 0 1\n")
    # Every boot starts from the same image: let systemd make a fresh machine id.
    _write(root / "etc/machine-id", "")
    resolv = root / "etc/resolv.conf"
    if resolv.is_symlink():
        resolv.unlink()
    _write(resolv, "nameserver 10.0.2.3\n")
    for name, text in NETWORK_FILES.items():
        _write(root / "etc/systemd/network" / name, text)
    _write(root / "etc/ssh/sshd_config.d/storage-labs.conf", SSHD_CONFIG)
    for old in (root / "etc/ssh").glob("ssh_host_*"):
        old.unlink()
    shutil.copyfile(keys.host_key, root / "etc/ssh/ssh_host_ed25519_key")
    (root / "etc/ssh/ssh_host_ed25519_key").chmod(0o600)
    _write(root / "etc/ssh/ssh_host_ed25519_key.pub", keys.host_pub + "\n")
    (root / "root/.ssh").mkdir(mode=0o700, exist_ok=True)
    _write(root / "root/.ssh/authorized_keys", keys.client_pub + "\n", 0o600)
    # debootstrap's "do not start services" stub must not stay in the image.
    (root / "usr/sbin/policy-rc.d").unlink(missing_ok=True)
    for unit in ENABLE_UNITS:
        subprocess.run(["systemctl", f"--root={root}", "enable", unit],
                       check=True, capture_output=True)
    for unit in DISABLE_UNITS:
        # Not every unit exists in every package version; disabling a missing one is fine.
        subprocess.run(["systemctl", f"--root={root}", "disable", unit], capture_output=True)


def build_image(progress: Progress | None = None, force: bool = False,
                release: str = DEFAULT_RELEASE) -> tuple[Image, bool, float]:
    """The image for the current recipe, built if needed. Returns (image, built_now, s)."""
    started = time.monotonic()
    check_release(release)
    keys = ensure_keys()
    digest = recipe_hash(keys, release)
    vm_cache = cache_dir() / "vm"
    vm_cache.mkdir(parents=True, exist_ok=True)
    final = vm_cache / digest
    with open(vm_cache / ".build.lock", "w") as lock:
        # One build at a time; a second caller waits and then finds the image cached.
        fcntl.flock(lock, fcntl.LOCK_EX)
        image = _image_at(final)
        if image and not force:
            return image, False, time.monotonic() - started
        if os.geteuid() != 0:
            raise LabError("vm build: debootstrap needs root; run `sudo python -m labs vm build`")
        for tool in ("debootstrap", "mkfs.ext4", "qemu-img"):
            if shutil.which(tool) is None:
                raise LabError(f"vm build: {tool} is missing (scripts/system-packages.sh test "
                               "installs it)")
        _build(keys, digest, final, progress, release)
    image = _image_at(final)
    assert image is not None
    return image, True, time.monotonic() - started


def _build(keys: SSHKeys, digest: str, final: Path, progress: Progress | None,
           release: str) -> None:
    progress = progress or Progress("vm build", 4)
    started = time.monotonic()
    # Journaled first (labs.infra.scratch): a killed build leaves debootstrap's mounts and a
    # large folder, which `python -m labs clean` unmounts and deletes (only below it).
    with scratch_folder(final.parent, f".build-{digest}-") as scratch:
        root, out = scratch / "root", scratch / "out"
        out.mkdir()
        log_path = scratch / "build.log"
        in_memory = tree_in_memory(root)
        progress.step(f"debootstrap {release} with {len(packages(release))} packages from "
                      f"{mirror()}" + (" (the tree in memory)" if in_memory else ""))
        _stream(["debootstrap", "--variant=minbase", "--include=" + ",".join(packages(release)),
                 release, str(root), mirror()], progress, log_path)
        progress.step("configure network, SSH keys and services")
        customise(root, keys)
        kernels = sorted((root / "boot").glob("vmlinuz-*"))
        if not kernels:
            raise LabError(f"vm build: no kernel in {root}/boot (full log: {log_path})")
        version = kernels[-1].name.removeprefix("vmlinuz-")
        shutil.copyfile(kernels[-1], out / "vmlinuz")
        shutil.copyfile(root / "boot" / f"initrd.img-{version}", out / "initrd.img")
        progress.step(f"make the {IMAGE_SIZE_MIB} MiB ext4 root disk (mkfs.ext4 -d)")
        _stream(["mkfs.ext4", "-q", "-F", "-L", "labroot", "-d", str(root),
                 str(out / "disk.raw"), f"{IMAGE_SIZE_MIB}M"], progress, log_path)
        (out / "disk.raw").chmod(0o444)  # the base is only ever read, through overlays
        progress.step("record build.json")
        build = {"recipe_hash": digest, "recipe": recipe(keys, release), "release": release,
                 "kernel": version,
                 "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                 "build_s": round(time.monotonic() - started, 1), "tree_in_memory": in_memory,
                 "mirror": mirror()}
        _write(out / "build.json", json.dumps(build, indent=2) + "\n")
        shutil.copyfile(log_path, out / "build.log")
        if final.exists():  # --force: VMs still running keep their open copy of the old disk
            shutil.rmtree(final)
        out.rename(final)
