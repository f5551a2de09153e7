#!/bin/sh
# PostgreSQL for the recorder, from Debian's package (postgresql, version 15 or later), started as a
# team starts it by default: TCP on PORT and its Unix socket in DIR.
#
#   pg.sh serve DIR PORT   initdb into DIR/data on the first start (trust authentication,
#                          superuser "outbox"), then exec postgres listening on 127.0.0.1:PORT and
#                          on its Unix socket DIR/.s.PGSQL.PORT (`-k DIR`, PostgreSQL's default
#                          but for the directory); a restart finds the data directory and recovers.
#                          The processes connect over TCP to the recorder's proxy, never to the
#                          socket (which would pass the proxy by).
#   pg.sh ready PORT       exits 0 once the server accepts connections over TCP (pg_isready).
#
# PostgreSQL refuses to run as root. Run as root (a container, a CI machine), it runs as the user
# POSTGRES_USER (default: postgres, which Debian's package creates; else nobody): DIR is given to
# that user, and the directories above it that others cannot traverse get o+x (traverse only, no
# listing: the recorder's run directory is private). `exec setpriv` keeps the server the
# recorder's own child, so a SIGKILL of the process group kills the server and its backends.
set -eu

bin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
if [ -z "$bin" ] || [ ! -x "$bin/postgres" ]; then
    echo "pg.sh: no PostgreSQL server (apt-get install postgresql, or set PG_BIN)" >&2
    exit 4
fi

case "${1:-}" in
ready)
    exec "$bin/pg_isready" -q -h 127.0.0.1 -p "$2" -d postgres -U outbox -t 2
    ;;
serve)
    dir=$(cd "$2" && pwd)
    port=$3
    ;;
*)
    echo "usage: pg.sh serve DIR PORT | pg.sh ready PORT" >&2
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
exec_as() {
    if [ "$(id -u)" = 0 ]; then
        exec setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups "$@"
    fi
    exec "$@"
}
exec_as "$bin/postgres" -D "$dir/data" -p "$port" -h 127.0.0.1 -k "$dir" \
    -c max_connections=50 -c shared_buffers=32MB -c recovery_init_sync_method=syncfs
