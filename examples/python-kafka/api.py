"""The API: ``POST /tasks`` commits the task and its outbox row in one PostgreSQL transaction.

Body: ``{"task_id": "...", "aggregate_id": "...", "amount": N}``. Answers 201 with the event id for
a new task, 200 with the event id of a task id it already has (nothing changes), 400 for a body it
cannot read, 503 when the store stayed down (nothing committed, or the commit's outcome unknown:
the client sends the task again). Serves on 127.0.0.1:``PORT``.

The outbox row's ``aggregate_seq`` is the next number of its aggregate, taken under a
transaction-scoped advisory lock on the aggregate, so an aggregate's rows commit in their order.

After the commit the request's span gets two span events, ``task_accepted`` and
``intent_recorded``, with ``outbox.task_id``, ``outbox.event_id`` and the commit's
``outbox.store_rev``. The span ends, and is exported, before the answer is sent. A commit whose
reply was lost may have happened: the task is tried again, and if the row is there, written by
this very life with the number that commit took, its two events are reported then.
"""

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.trace import SpanKind, Status, StatusCode

from common import (LIFE, STORE_DOWN, Store, Uncertain, fail, next_rev, outbox, setting,
                    stop_on_sigterm, tracer)


def create(store, uncertain, task):
    """Commits the task and its outbox row, or finds the row an earlier request committed.

    Returns ``(event_id, aggregate_id, aggregate_seq, rev, report, created)``.
    """
    task_id, amount, aggregate_id = task

    def body(cur, attempt):
        cur.execute("SELECT event_id, aggregate_id, aggregate_seq, store_rev, created_by"
                    " FROM outbox WHERE task_id = %s", (task_id,))
        row = cur.fetchone()
        if row:
            mine = row[4] == LIFE and uncertain.get(task_id) == row[3]
            return row[0], row[1], row[2], row[3], mine, False
        cur.execute("SELECT pg_advisory_xact_lock(1, hashtext(%s))", (aggregate_id,))
        cur.execute("SELECT COALESCE(MAX(aggregate_seq), 0) + 1 FROM outbox"
                    " WHERE aggregate_id = %s", (aggregate_id,))
        (aggregate_seq,) = cur.fetchone()
        rev = next_rev(cur)
        attempt["rev"] = rev
        event_id = f"evt-{uuid.uuid4().hex[:12]}"
        cur.execute("INSERT INTO tasks (task_id, aggregate_id, amount) VALUES (%s, %s, %s)",
                    (task_id, aggregate_id, amount))
        cur.execute("INSERT INTO outbox (event_id, task_id, aggregate_id, aggregate_seq, amount,"
                    " store_rev, created_by) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    (event_id, task_id, aggregate_id, aggregate_seq, amount, rev, LIFE))
        return event_id, aggregate_id, aggregate_seq, rev, True, True

    until = time.monotonic() + 10
    while True:
        try:
            return store.transaction(body)
        except Uncertain as error:
            if error.rev is not None:
                uncertain[task_id] = error.rev
            if time.monotonic() > until:
                raise
        except STORE_DOWN:
            if time.monotonic() > until:
                raise
        time.sleep(0.2)


def read_task(handler):
    """``(task_id, amount, aggregate_id)`` from the request body, or ``None`` if it is not one."""
    try:
        body = json.loads(handler.rfile.read(int(handler.headers.get("Content-Length", 0))))
        task_id, amount = str(body["task_id"]), int(body["amount"])
        aggregate_id = str(body.get("aggregate_id") or task_id)
    except (ValueError, KeyError, TypeError):
        return None
    return (task_id, amount, aggregate_id) if task_id else None


def handle(tracer_, store, uncertain, task):
    """One task: its span, its commit; returns the answer ``(status, body)``."""
    with tracer_.start_as_current_span("POST /tasks", kind=SpanKind.SERVER,
                                       record_exception=False,
                                       set_status_on_exception=False) as span:
        try:
            event_id, aggregate_id, aggregate_seq, rev, report, created = create(
                store, uncertain, task)
        except (Uncertain, *STORE_DOWN) as error:
            span.set_status(Status(StatusCode.ERROR, f"store: {error}"))
            return 503, {"error": f"store: {error}"}
        if report:
            uncertain.pop(task[0], None)
            ids = {"task_id": task[0], "event_id": event_id, "store_rev": rev}
            span.add_event("task_accepted", outbox("task_accepted", **ids))
            span.add_event("intent_recorded", outbox(
                "intent_recorded", aggregate_id=aggregate_id, aggregate_seq=aggregate_seq, **ids))
    return (201 if created else 200), {"task_id": task[0], "event_id": event_id}


def serve(port, tracer_):
    """The HTTP server (not started yet): one store connection, one request at a time."""
    lock, store, uncertain = threading.Lock(), Store(), {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (the stdlib's name)
            if self.path != "/tasks":
                self.answer(404, {"error": "no such path"})
                return
            task = read_task(self)
            if task is None:
                self.answer(400, {"error": "expected {task_id, amount, aggregate_id}"})
                return
            with lock:
                status, body = handle(tracer_, store, uncertain, task)
            self.answer(status, body)

        def answer(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_):
            pass

    try:
        return ThreadingHTTPServer(("127.0.0.1", port), Handler)
    except OSError as error:
        fail(f"cannot serve on 127.0.0.1:{port}: {error}")


def main():
    port = setting("PORT")
    if not (port.isdigit() and 0 < int(port) < 65536):
        fail(f"PORT must be a TCP port (1-65535), not {port!r}")
    setting("DATABASE_URL")
    provider, tracer_ = tracer("orders-api")
    server = serve(int(port), tracer_)
    server.daemon_threads = True
    stop = stop_on_sigterm()
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    print(f"listening on 127.0.0.1:{port}", flush=True)
    stop.wait()
    server.shutdown()
    provider.shutdown()


if __name__ == "__main__":
    main()
