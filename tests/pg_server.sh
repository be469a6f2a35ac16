#!/bin/sh
# A throwaway PostgreSQL server for the tests (test_db, tests/cli/mlc_db_pg.sh).
#
#   sh tests/pg_server.sh start OWNER_PID [DBNAME...]
#     initdb into a new temporary directory, start the server listening only
#     on a Unix socket in it (no TCP), create the databases, and print the
#     directory (the socket's: postgresql:///DBNAME?host=DIR&user=postgres).
#     A watchdog stops the server and removes the directory once OWNER_PID
#     exits, however it ends (a crash or SIGKILL included). Prints
#     "SKIP reason" and exits 77 when the server binaries are missing or the
#     server does not start.
#   sh tests/pg_server.sh stop DIR
#     stop it now and remove the directory.
#
# PostgreSQL refuses to run as root: as root, the server runs as the
# postgres user (runuser or su), which owns the directory.
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}

as_owner() { # command... as the server's user
  if [ "$(id -u)" -ne 0 ]; then "$@"
  elif command -v runuser >/dev/null 2>&1; then runuser -u postgres -- "$@"
  else su postgres -s /bin/sh -c "$*"
  fi
}

stop() { # DIR
  [ -d "$1" ] || return 0
  [ -f "$1/data/postmaster.pid" ] && as_owner "$PGBIN/pg_ctl" -D "$1/data" -m immediate -w stop >/dev/null 2>&1
  rm -rf "$1"
}

start() { # OWNER_PID DBNAME...
  owner=$1; shift
  for b in initdb pg_ctl createdb; do
    if [ ! -x "$PGBIN/$b" ]; then echo "SKIP postgresql: no $b (apt-get install postgresql)"; exit 77; fi
  done
  if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
    echo "SKIP postgresql: running as root and there is no postgres user"; exit 77
  fi
  dir=$(mktemp -d /tmp/mlc-pg-XXXXXX) || exit 1
  [ "$(id -u)" -eq 0 ] && chown postgres "$dir"
  if ! as_owner "$PGBIN/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1; then
    echo "SKIP postgresql: initdb failed: $(tail -n 3 "$dir/initdb.log" | tr '\n' ' ')"; rm -rf "$dir"; exit 77
  fi
  # Unix socket only; fsync off: the tests check transactions, not disks.
  if ! as_owner "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
      -o "-k $dir -c listen_addresses= -c fsync=off -c max_connections=40" start >/dev/null 2>&1; then
    echo "SKIP postgresql: the server did not start: $(tail -n 3 "$dir/server.log" | tr '\n' ' ')"
    stop "$dir"; exit 77
  fi
  for d in "$@"; do
    "$PGBIN/createdb" -h "$dir" -U postgres "$d" || { stop "$dir"; exit 1; }
  done
  # The watchdog: detached from our output, so that the caller's $(...)
  # returns at once.
  (trap '' HUP INT; while kill -0 "$owner" 2>/dev/null; do sleep 1; done; stop "$dir") \
    </dev/null >/dev/null 2>&1 &
  echo "$dir"
}

case $1 in
start) shift; start "$@" ;;
stop) stop "$2" ;;
*) echo "usage: $0 start OWNER_PID [DBNAME...] | stop DIR" >&2; exit 2 ;;
esac
