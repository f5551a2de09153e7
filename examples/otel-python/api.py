"""The API: ``POST /tasks`` commits the task and its outbox row in one SQLite transaction.

Body: ``{"task_id": "...", "aggregate_id": "...", "amount": N}``. Answers 201 with the event id for
a new task, 200 with the first event id for a task id it already has (nothing changes), 400 for a
body it cannot read. Serves on 127.0.0.1:``PORT``.

After the commit the request's span gets two span events, ``task_accepted`` and
``intent_recorded``, both with ``outbox.task_id``, ``outbox.event_id`` and the commit's
``outbox.store_rev`` (equal numbers: one atomic transaction). The span itself carries no ``outbox.*``
attribute: a span that does, with no kind on it or its events, is refused (a request that commits
nothing reports nothing). The span ends, and is exported, before the answer is sent.
"""

import json
import sqlite3
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.trace import SpanKind, Status, StatusCode

from common import begin, bump_rev, fail, outbox, setting, stop_on_sigterm, store, tracer


def create(db, task_id, amount, aggregate_id):
    """Commits the task and its outbox row; returns ``(event_id, store_rev, aggregate_seq)``.

    ``store_rev`` is ``None`` when the task already existed.
    """
    begin(db)
    try:
        row = db.execute("SELECT event_id FROM outbox WHERE task_id = ?", (task_id,)).fetchone()
        if row:
            db.execute("ROLLBACK")
            return row[0], None, None
        event_id = f"evt-{uuid.uuid4().hex[:12]}"
        (aggregate_seq,) = db.execute(
            "SELECT COALESCE(MAX(aggregate_seq), 0) + 1 FROM outbox WHERE aggregate_id = ?",
            (aggregate_id,),
        ).fetchone()
        db.execute("INSERT INTO tasks (task_id, amount) VALUES (?, ?)", (task_id, amount))
        db.execute(
            "INSERT INTO outbox (event_id, task_id, aggregate_id, aggregate_seq, amount)"
            " VALUES (?, ?, ?, ?, ?)",
            (event_id, task_id, aggregate_id, aggregate_seq, amount),
        )
        rev = bump_rev(db)
        db.execute("COMMIT")
        return event_id, rev, aggregate_seq
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def read_task(handler):
    """``(task_id, amount, aggregate_id)`` from the request body, or ``None`` if it is not one."""
    try:
        body = json.loads(handler.rfile.read(int(handler.headers.get("Content-Length", 0))))
        task_id, amount = str(body["task_id"]), int(body["amount"])
        aggregate_id = str(body.get("aggregate_id") or task_id)
    except (ValueError, KeyError, TypeError):
        return None
    return (task_id, amount, aggregate_id) if task_id else None


def serve(port, tracer_, db):
    """The HTTP server (not started yet)."""
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (the stdlib's name)
            if self.path != "/tasks":
                self.answer(404, {"error": "no such path"})
                return
            task = read_task(self)
            if task is None:
                self.answer(400, {"error": "expected {task_id, amount, aggregate_id}"})
                return
            task_id, amount, aggregate_id = task
            with tracer_.start_as_current_span(
                "POST /tasks", kind=SpanKind.SERVER,
                record_exception=False, set_status_on_exception=False,
            ) as span:
                try:
                    with lock:
                        event_id, rev, aggregate_seq = create(db, task_id, amount, aggregate_id)
                except sqlite3.Error as error:  # nothing committed: the client may send it again
                    span.set_status(Status(StatusCode.ERROR, f"store: {error}"))
                    self.answer(503, {"error": f"store: {error}"})
                    return
                if rev is not None:
                    ids = {"task_id": task_id, "event_id": event_id}
                    span.add_event("task_accepted", outbox("task_accepted", store_rev=rev, **ids))
                    span.add_event(
                        "intent_recorded",
                        outbox("intent_recorded", store_rev=rev, aggregate_id=aggregate_id,
                               aggregate_seq=aggregate_seq, **ids),
                    )
            self.answer(201 if rev is not None else 200, {"task_id": task_id, "event_id": event_id})

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
    port = int(port)
    provider, tracer_ = tracer()
    db = store()
    server = serve(port, tracer_, db)
    server.daemon_threads = True
    stop = stop_on_sigterm()
    # Polled every 50 ms for shutdown (the default, 0.5 s, would hold every stop for as long).
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    print(f"listening on 127.0.0.1:{port}", flush=True)
    stop.wait()
    server.shutdown()
    provider.shutdown()


if __name__ == "__main__":
    main()
