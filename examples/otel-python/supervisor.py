"""Runs the example: redis-server, a SQLite file, the API, the relay and the worker; one crash.

The supervisor starts ``redis-server`` on a free loopback port, creates the SQLite store, starts the
three processes, sends ``--tasks`` requests to the API and waits until every task is done and the
broker is empty. The worker's first life is armed to stop after its ``--crash-after``-th commit,
before the ACK; the supervisor then kills it with SIGKILL, writes the ``crash`` span of that life
and the ``restart`` span of the next, and starts the next life, which gets the copy again.

At the end it writes the ``observed`` span (totals read back from SQLite and Redis) and the
``run_end`` span, and joins every process's spans into ``--out``: OTLP JSON Lines that
``analyzer check`` judges. Exit codes: 0 done; 1 the run failed (a process died, or the work did
not finish in ``--timeout`` seconds); 2 usage or a missing ``redis-server``; 3 a missing Python
package.
"""

import argparse
import json
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent


def fail(code, message):
    """One line on stderr, then exit with ``code``."""
    print(f"otel-python: {message}", file=sys.stderr)
    sys.exit(code)


def free_port():
    """A loopback port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(workdir):
    """Starts ``redis-server`` on a free loopback port and waits for its PING; returns it."""
    program = shutil.which("redis-server")
    if program is None:
        fail(2, "redis-server was not found on PATH: apt-get install redis-server")
    port = free_port()
    log = open(workdir / "redis.log", "w")
    process = subprocess.Popen(
        [program, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(workdir)],
        stdout=log, stderr=subprocess.STDOUT,
    )
    client = common.broker(port)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            return process, port, client
        except common.redis.ConnectionError:
            if process.poll() is not None or time.monotonic() > deadline:
                fail(1, f"redis-server did not start (its log: {workdir / 'redis.log'})")
            time.sleep(0.02)


class Run:
    """The run's processes, its store and broker, and the supervisor's own tracer."""

    def __init__(self, args, workdir, redis_port):
        self.args, self.workdir, self.redis_port = args, workdir, redis_port
        self.spans = workdir / "spans"
        self.spans.mkdir(parents=True, exist_ok=True)
        self.db = workdir / "outbox.db"
        self.provider, self.tracer = common.tracer(
            "supervisor", 0, self.spans / "supervisor.jsonl", args.run_id, args.scenario)
        self.children = {}
        self.lives = {}
        self.crashes = queue.Queue()

    def spawn(self, actor, *extra):
        """Starts the next life of ``actor`` (api, relay or worker)."""
        life = self.lives.get(actor, -1) + 1
        self.lives[actor] = life
        process = subprocess.Popen(
            [sys.executable, str(HERE / f"{actor}.py"), "--db", str(self.db),
             "--redis-port", str(self.redis_port),
             "--spans", str(self.spans / f"{actor}-{life}.jsonl"),
             "--incarnation", str(life), "--run-id", self.args.run_id,
             "--scenario", self.args.scenario, *extra],
            stdout=subprocess.PIPE, text=True, cwd=HERE,
        )
        self.children[actor] = process
        if actor == "worker":
            def watch(out=process.stdout, life=life):
                for line in out:
                    if line.startswith("crash-point "):
                        _, point, event_id = line.split()
                        self.crashes.put((life, point, event_id))
            threading.Thread(target=watch, daemon=True).start()
        return process

    def event(self, name, kind, **fields):
        """One span of the supervisor's that is one event (its ``outbox.*`` attributes)."""
        common.event_span(self.tracer, name, kind, **fields)

    def kill_worker(self, life, point):
        """SIGKILL the worker's life ``life``; write its ``crash`` and the next life's ``restart``."""
        process = self.children["worker"]
        process.send_signal(signal.SIGKILL)
        status = process.wait()
        self.event("worker killed", "crash", actor="worker", incarnation=life,
                   detail={"point": point, "status": f"signal {-status}"})
        self.event("worker restarted", "restart", actor="worker", incarnation=life + 1)
        self.spawn("worker", *self.worker_flags())

    def worker_flags(self):
        return ["--bug"] if self.args.bug else []

    def quiet(self):
        """Every task done, nothing pending in the outbox, nothing queued or unACKed."""
        store = common.store(self.db)
        try:
            tasks, done = store.execute("SELECT COUNT(*), SUM(done) FROM tasks").fetchone()
            (pending,) = store.execute(
                "SELECT COUNT(*) FROM outbox WHERE published = 0").fetchone()
        finally:
            store.close()
        client = common.broker(self.redis_port)
        in_flight = client.llen(common.QUEUE) + client.llen(common.PROCESSING)
        return tasks == self.args.tasks and done == tasks and pending == 0 and in_flight == 0

    def observe(self):
        """The ground truth, read back from SQLite and Redis."""
        store = common.store(self.db)
        try:
            count = lambda sql: store.execute(sql).fetchone()[0]  # noqa: E731
            observed = {
                "tasks": count("SELECT COUNT(*) FROM tasks"),
                "tasks_done": count("SELECT COUNT(*) FROM tasks WHERE done = 1"),
                "results": count("SELECT COUNT(*) FROM results"),
                "dedup_keys": count("SELECT COUNT(*) FROM processed"),
                "counter": count("SELECT value FROM counter"),
                "outbox_pending": count("SELECT COUNT(*) FROM outbox WHERE published = 0"),
                "outbox_published": count("SELECT COUNT(*) FROM outbox WHERE published = 1"),
            }
        finally:
            store.close()
        observed["stream_messages"] = common.broker(self.redis_port).llen(common.LOG)
        return observed


def post_task(port, task_id, amount, aggregate_id):
    """One request to the API."""
    body = json.dumps({"task_id": task_id, "amount": amount, "aggregate_id": aggregate_id})
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/tasks", data=body.encode(), method="POST",
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def stop(process):
    """SIGTERM, then wait (SIGKILL after 10 s)."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def supervise(args, workdir):
    """The run itself; returns the observed totals."""
    redis_server, redis_port, _ = start_redis(workdir)
    run = Run(args, workdir, redis_port)
    try:
        db = common.store(run.db)
        db.executescript(common.SCHEMA)
        db.close()
        run.event("run start", "run_start",
                  detail={"tasks": args.tasks, "crash_after": args.crash_after, "bug": args.bug})
        run.spawn("worker", "--crash-after", str(args.crash_after), *run.worker_flags())
        run.spawn("relay")
        api = run.spawn("api")
        line = api.stdout.readline().split()
        if line[:1] != ["listening"]:
            fail(1, "the API did not start")
        api_port = int(line[1])
        for i in range(1, args.tasks + 1):
            try:
                post_task(api_port, f"task-{i}", i, f"order-{i % 2}")
            except OSError as error:
                fail(1, f"the API did not answer task-{i}: {error}")
        crashed = args.crash_after < 1 or args.crash_after > args.tasks
        deadline = time.monotonic() + args.timeout
        while not (crashed and run.quiet()):
            try:
                life, point, event_id = run.crashes.get(timeout=0.05)
                run.kill_worker(life, point)
                print(f"killed worker#{life} at {point} of {event_id}", flush=True)
                crashed = True
            except queue.Empty:
                pass
            for actor, process in run.children.items():
                if process.poll() is not None:
                    fail(1, f"{actor} exited with status {process.returncode}")
            if time.monotonic() > deadline:
                fail(1, f"the work did not finish within {args.timeout} s")
        for process in run.children.values():
            stop(process)
        observed = run.observe()
        run.event("observe", "observed", actor="observer", detail=observed)
        run.event("run end", "run_end", detail={"recovered": True, "reason": "quiet"})
        return observed
    finally:
        for process in run.children.values():
            if process.poll() is None:
                process.kill()
        run.provider.shutdown()
        stop(redis_server)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the OTLP JSON Lines file to write")
    parser.add_argument("--bug", action="store_true",
                        help="the worker skips its dedup check (a redelivery is applied again)")
    parser.add_argument("--tasks", type=int, default=6)
    parser.add_argument("--crash-after", type=int, default=3,
                        help="kill the worker after this commit, before its ACK (0: no crash)")
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--run-id", default="otel-python")
    parser.add_argument("--scenario", default="crash-before-ack")
    parser.add_argument("--workdir", help="keep the SQLite file, logs and spans here")
    args = parser.parse_args()
    if args.tasks < 1:
        fail(2, "--tasks must be at least 1")
    if args.workdir:
        workdir = Path(args.workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        if any(workdir.iterdir()):
            fail(2, f"--workdir {workdir} is not empty")
        observed = supervise(args, workdir)
        spans = workdir / "spans"
        join(spans, Path(args.out))
    else:
        with tempfile.TemporaryDirectory(prefix="otel-python-") as tmp:
            observed = supervise(args, Path(tmp))
            join(Path(tmp) / "spans", Path(args.out))
    print(f"spans: {args.out}; observed: {json.dumps(observed, sort_keys=True)}")


def join(spans, out):
    """Concatenates every life's OTLP JSON Lines into ``out`` (the reader orders by time)."""
    with open(out, "w", encoding="utf-8") as sink:
        for part in sorted(spans.glob("*.jsonl")):
            sink.write(part.read_text(encoding="utf-8"))


sys.path.insert(0, str(HERE))
import common  # noqa: E402 (after the path; exits 3 with one line when a package is missing)

if __name__ == "__main__":
    main()
