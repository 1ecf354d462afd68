# A PostgreSQL for the tests. Sourced by test.sh, not run.
#
# `postgres_for_tests` exports SIGNOFF_TEST_POSTGRES_URL, an admin URL the tests create their
# throwaway databases with:
#   - as given, when it is set already;
#   - postgres://postgres@127.0.0.1:5432/postgres when a server answers there and lets that
#     user in;
#   - otherwise a throwaway cluster in a temporary folder, from Debian's `postgresql` package
#     (installed if missing), run as an unprivileged user on a free port, with trust
#     authentication on loopback only; `postgres_stop` (on exit) stops and removes it.

PG_TMP=""

postgres_bin() {
  local dir
  dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
  [ -n "$dir" ] && [ -x "$dir/initdb" ] && echo "$dir"
}

postgres_for_tests() {
  if [ -n "${SIGNOFF_TEST_POSTGRES_URL:-}" ]; then
    echo "PostgreSQL for the tests: \$SIGNOFF_TEST_POSTGRES_URL"
    return
  fi
  local bin
  bin="$(postgres_bin || true)"
  if [ -z "$bin" ]; then
    step "Installing PostgreSQL from Debian (the tests' second backend)"
    export DEBIAN_FRONTEND=noninteractive
    as_root apt-get update -qq
    as_root apt-get install -y -qq postgresql >/dev/null
    bin="$(postgres_bin)" || die "no initdb after installing postgresql"
  fi
  if "$bin/pg_isready" -q -h 127.0.0.1 -p 5432 \
    && "$bin/psql" -qtA -h 127.0.0.1 -p 5432 -U postgres -d postgres -c 'SELECT 1' >/dev/null 2>&1; then
    export SIGNOFF_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:5432/postgres"
    echo "PostgreSQL for the tests: the server on 127.0.0.1:5432"
    return
  fi
  # A throwaway cluster. PostgreSQL refuses to run as root: as root, it runs as the
  # package's `postgres` user.
  local run=()
  if [ "$(id -u)" -eq 0 ]; then run=(runuser -u postgres --); fi
  PG_TMP="$(mktemp -d /tmp/signoff-pg.XXXXXX)"
  chmod 755 "$PG_TMP"
  [ "$(id -u)" -eq 0 ] && chown postgres "$PG_TMP"
  local port
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  "${run[@]}" "$bin/initdb" -D "$PG_TMP/data" -U postgres --auth=trust -E UTF8 --no-locale >/dev/null
  # Fast and disposable: no fsync (the cluster is deleted afterwards), enough connections for
  # tests that each open a pool.
  "${run[@]}" "$bin/pg_ctl" -s -D "$PG_TMP/data" -l "$PG_TMP/log" -w start -o \
    "-h 127.0.0.1 -p $port -k $PG_TMP -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=500"
  export SIGNOFF_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/postgres"
  echo "PostgreSQL for the tests: a throwaway cluster on 127.0.0.1:$port"
}

postgres_stop() {
  if [ -n "$PG_TMP" ] && [ -d "$PG_TMP" ]; then
    local bin run=()
    bin="$(postgres_bin)"
    if [ "$(id -u)" -eq 0 ]; then run=(runuser -u postgres --); fi
    "${run[@]}" "$bin/pg_ctl" -s -D "$PG_TMP/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$PG_TMP"
    PG_TMP=""
  fi
}
