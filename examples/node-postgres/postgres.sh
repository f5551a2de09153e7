#!/bin/sh
# PostgreSQL for the recorder, from Debian's package (postgresql, version 15 or later).
#
#   postgres.sh serve DIR PORT   initdb into DIR/data on the first start (trust authentication,
#                                superuser "outbox"), then exec postgres on 127.0.0.1:PORT, TCP
#                                only (no Unix socket: its path would be limited to 107 bytes, and
#                                a client on it would pass the recorder's proxy by);
#                                a restart finds the data directory and recovers.
#   postgres.sh ready PORT       exits 0 once the server accepts connections (pg_isready).
#
# With PG_SSL=1 the server also speaks TLS, with a self-signed certificate made in DIR on the
# first start (openssl); clients choose it with PGSSLMODE (node-postgres: PGSSLMODE=no-verify).
#
# PostgreSQL refuses to run as root. Run as root (a container, a CI machine), it runs as the user
# POSTGRES_USER (default: postgres, which Debian's package creates; else nobody): DIR is given to
# that user, and the directories above it that others cannot traverse get o+x (traverse only, no
# listing: the recorder's run directory is private). `exec setpriv` keeps the server the
# recorder's own child, so a SIGKILL of the process group kills the server and its backends.
set -eu

bin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
if [ -z "$bin" ] || [ ! -x "$bin/postgres" ]; then
    echo "postgres.sh: no PostgreSQL server (apt-get install postgresql, or set PG_BIN)" >&2
    exit 4
fi

case "${1:-}" in
ready)
    # node-postgres's PGSSLMODE=no-verify is no libpq mode; the check needs no TLS.
    unset PGSSLMODE
    exec "$bin/pg_isready" -q -h 127.0.0.1 -p "$2" -d postgres -U outbox -t 2
    ;;
serve)
    dir=$2
    port=$3
    ;;
*)
    echo "usage: postgres.sh serve DIR PORT | postgres.sh ready PORT" >&2
    exit 2
    ;;
esac

as_user() {
    "$@"
}
if [ "$(id -u)" = 0 ]; then
    user=${POSTGRES_USER:-postgres}
    id -u "$user" >/dev/null 2>&1 || user=nobody
    chown "$user" "$dir"
    up=$dir
    while [ "$up" != / ] && [ "$up" != . ]; do
        if [ -z "$(find "$up" -maxdepth 0 -perm -o+x)" ]; then
            chmod o+x "$up"
        fi
        up=$(dirname "$up")
    done
    as_user() {
        setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups "$@"
    }
fi

if [ ! -f "$dir/data/PG_VERSION" ]; then
    rm -rf "$dir/data"
    as_user "$bin/initdb" -D "$dir/data" -U outbox --auth=trust -E UTF8 --locale=C.UTF-8 \
        --no-sync >"$dir/initdb.log" 2>&1 || {
        tail -n 5 "$dir/initdb.log" >&2
        exit 4
    }
fi
# After a SIGKILL the old server's backends (each in a session of its own) exit when they see
# their postmaster gone; PostgreSQL refuses to start while they still hold its shared memory.
if [ -f "$dir/data/postmaster.pid" ]; then
    shmid=$(sed -n 7p "$dir/data/postmaster.pid" | awk '{print $2}')
    n=0
    while [ -n "$shmid" ] && [ "$n" -lt 100 ] &&
        ipcs -m | awk -v id="$shmid" '$2 == id && $6 > 0 { held = 1 } END { exit !held }'; do
        sleep 0.1
        n=$((n + 1))
    done
fi
ssl=""
if [ -n "${PG_SSL:-}" ]; then
    if [ ! -f "$dir/server.key" ]; then
        openssl req -new -x509 -days 30 -nodes -subj /CN=127.0.0.1 -keyout "$dir/server.key" \
            -out "$dir/server.crt" >"$dir/openssl.log" 2>&1 || {
            tail -n 5 "$dir/openssl.log" >&2
            exit 4
        }
        chmod 600 "$dir/server.key"
        [ "$(id -u)" = 0 ] && chown "$user" "$dir/server.key" "$dir/server.crt"
    fi
    ssl="-c ssl=on -c ssl_cert_file=$dir/server.crt -c ssl_key_file=$dir/server.key"
fi
exec_as() {
    if [ "$(id -u)" = 0 ]; then
        exec setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups "$@"
    fi
    exec "$@"
}
# $ssl is empty or three options (paths without spaces: the recorder's run directory).
# shellcheck disable=SC2086
exec_as "$bin/postgres" -D "$dir/data" -p "$port" -h 127.0.0.1 -k "" \
    -c max_connections=50 -c shared_buffers=32MB -c recovery_init_sync_method=syncfs $ssl
