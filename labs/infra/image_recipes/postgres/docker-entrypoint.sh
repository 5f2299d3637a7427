#!/bin/sh
# A small stand-in for the official image's entrypoint: initdb on first start, then postgres.
set -eu
: "${PGDATA:=/var/lib/postgresql/data}"
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  exec gosu postgres "$0" "$@"
fi
if [ "${1:-}" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  auth="${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}"
  if [ "$auth" != trust ] && [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "set POSTGRES_PASSWORD, or POSTGRES_HOST_AUTH_METHOD=trust" >&2
    exit 1
  fi
  pwfile=/tmp/pgpass.$$
  printf '%s\n' "${POSTGRES_PASSWORD:-postgres}" > "$pwfile"
  # shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a list of flags on purpose
  initdb --username="${POSTGRES_USER:-postgres}" --pwfile="$pwfile" \
    ${POSTGRES_INITDB_ARGS:-} -D "$PGDATA"
  rm -f "$pwfile"
  printf "\nhost all all all %s\n" "$auth" >> "$PGDATA/pg_hba.conf"
  printf "\nlisten_addresses = '*'\n" >> "$PGDATA/postgresql.conf"
fi
exec "$@"
