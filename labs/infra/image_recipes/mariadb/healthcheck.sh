#!/bin/sh
# Healthy once the server answers a query over its unix socket (root via unix_socket
# authentication) and InnoDB is up: MariaDB accepts connections only after crash recovery.
exec mariadb --protocol=socket -N -B -e \
  "SELECT 1 FROM information_schema.ENGINES WHERE ENGINE='InnoDB' AND SUPPORT IN ('YES','DEFAULT')" \
  2>/dev/null | grep -qx 1
