#!/bin/bash
# storage-labs MariaDB entrypoint.
#
#   docker run IMAGE [mariadbd] [--option=value ...]   initialise the data dir if empty, start
#   docker run IMAGE sysbench ... | bash ...           run that command instead
#
# Server settings come as arguments (--innodb-doublewrite=OFF ...) or as environment
# variables MARIADBD_<OPTION>=value (MARIADBD_INNODB_DOUBLEWRITE=OFF); arguments win.
# MARIADB_BIND_ADDRESS (default 127.0.0.1) is where the server listens inside the container:
# a port published by docker reaches the container's own address, not its loopback, so a lab
# that publishes one sets 0.0.0.0 here and publishes on the host's 127.0.0.1 only.
# root@localhost authenticates by unix socket only: no password is set or written anywhere.
set -euo pipefail

if [ $# -eq 0 ] || [ "${1#-}" != "$1" ]; then
  set -- mariadbd "$@"
fi
if [ "$1" != mariadbd ]; then
  exec "$@"
fi
shift

settings=()
for name in $(compgen -v MARIADBD_ || true); do
  option=${name#MARIADBD_}
  settings+=("--${option,,}=${!name}")
done
settings+=("$@")

datadir=/var/lib/mysql
for arg in "${settings[@]}"; do
  case "$arg" in
    --datadir=*) datadir=${arg#*=} ;;
    --tmpdir=*)
      # tmpdir may be a bind mount from the lab host (the devices chapter's file systems).
      mkdir -p "${arg#*=}"
      chown mysql:mysql "${arg#*=}" ;;
  esac
done
mkdir -p "$datadir" /run/mysqld
chown mysql:mysql "$datadir" /run/mysqld
chmod 750 "$datadir"

defaults=(--defaults-file=/etc/mysql/storage-labs.cnf)
if [ ! -d "$datadir/mysql" ]; then
  echo "storage-labs: initialising $datadir" >&2
  # The same settings as the server, so fixed-at-creation ones (innodb_page_size) agree.
  mariadb-install-db "${defaults[@]}" --user=mysql --datadir="$datadir" \
    --auth-root-authentication-method=socket --skip-test-db "${settings[@]}" >&2
fi
exec mariadbd "${defaults[@]}" --user=mysql --datadir="$datadir" \
  --bind-address="${MARIADB_BIND_ADDRESS:-127.0.0.1}" "${settings[@]}"
