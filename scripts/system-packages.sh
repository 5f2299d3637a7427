#!/usr/bin/env bash
# Installs (or, without root, lists) the Debian/Ubuntu packages the book and its tests need.
# Shared by `make book` and `make test`; idempotent: packages already present are skipped.
#
#   scripts/system-packages.sh book   what building the book needs
#   scripts/system-packages.sh fast   what `make test-fast` needs: the book and a browser
#   scripts/system-packages.sh test   what the full test suite needs (a superset)
set -euo pipefail

profile="${1:-book}"

# package -> why. Keep one package per line so the list reads as documentation.
book_packages=(
  "python3-venv:make book creates .venv with python3 -m venv"
  "git:run.json records the project's commit"
  "make:the book and tests are driven by the Makefile"
)
browser_packages=(
  "chromium:the browser test opens the built site with the network cut off"
  "chromium-driver:Selenium drives chromium through chromedriver"
)
test_packages=(
  "e2fsprogs:labs make ext4 file systems on loop devices (mkfs.ext4)"
  "util-linux:losetup, mount and findmnt for loop devices the labs create"
  "procps:the leak checks count processes (pgrep)"
  "docker.io:labs run PostgreSQL in containers (dockerd, started by the tests when none runs)"
  "debootstrap:python -m labs vm build and images build make Debian root file systems"
  "qemu-system-x86:lab VMs boot Debian's kernel under QEMU (KVM if it works, else TCG)"
  "qemu-utils:qemu-img makes the copy-on-write overlays and data disks of lab VMs"
  "openssh-client:ssh-keygen makes the per-install key that logs into lab VMs"
  "fio:labs on --host local and benchmarks/harness_overhead.py measure loop devices with fio"
  "sysbench:the devices lab on --host local runs sysbench fileio on a loop device"
  "maven:python -m labs images build cassandra fetches the server jars from Maven Central (mvn)"
)

case "$profile" in
  book) wanted=("${book_packages[@]}") ;;
  fast) wanted=("${book_packages[@]}" "${browser_packages[@]}") ;;
  test) wanted=("${book_packages[@]}" "${browser_packages[@]}" "${test_packages[@]}") ;;
  *) echo "system-packages.sh: unknown profile '$profile' (use book, fast or test)" >&2; exit 2 ;;
esac

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "system-packages.sh: not a Debian/Ubuntu system; install the equivalents of:" >&2
  for item in "${wanted[@]}"; do echo "  ${item%%:*}  (${item#*:})" >&2; done
  exit 0
fi

missing=()
for item in "${wanted[@]}"; do
  package="${item%%:*}"
  # Debian's python3 has venv in python3-venv; a Python built elsewhere (pyenv) has it already.
  if [ "$package" = python3-venv ] && python3 -c 'import ensurepip, venv' 2>/dev/null; then
    continue
  fi
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  sudo_cmd=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo_cmd=(sudo -n)
else
  echo "system-packages.sh: these packages are needed for '$profile' and I cannot install them without root:" >&2
  for item in "${wanted[@]}"; do
    for package in "${missing[@]}"; do
      [ "${item%%:*}" = "$package" ] && echo "  $package  (${item#*:})" >&2
    done
  done
  echo "Install them with:  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi

echo "system-packages.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
