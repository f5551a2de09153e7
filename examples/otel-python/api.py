"""The API: ``POST /tasks`` commits the task and its outbox row in one SQLite transaction.

The request's span carries ``outbox.task_id`` and ``outbox.event_id``; after the commit it gets two
span events, ``task_accepted`` and ``intent_recorded``, both with the commit's ``outbox.store_rev``
(equal numbers: one atomic transaction). A repeated ``task_id`` answers with the first event id and
records nothing new. Prints ``listening PORT`` once it serves.
"""

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, HTTPServer

from common import begin, bump_rev, outbox, role_arguments, stop_on_sigterm, store, tracer


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
        db.execute("ROLLBACK")
        raise


def main():
    args = role_arguments(__doc__).parse_args()
    provider, tracer_ = tracer("api", args.incarnation, args.spans, args.run_id, args.scenario)
    db = store(args.db)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (the stdlib's name)
            if self.path != "/tasks":
                self.send_error(404)
                return
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            task_id, amount = str(body["task_id"]), int(body["amount"])
            aggregate_id = str(body.get("aggregate_id", task_id))
            with tracer_.start_as_current_span(
                "POST /tasks", attributes={"outbox.task_id": task_id}
            ) as span:
                with lock:
                    event_id, rev, aggregate_seq = create(db, task_id, amount, aggregate_id)
                span.set_attribute("outbox.event_id", event_id)
                if rev is not None:
                    span.add_event("task_accepted", outbox("task_accepted", store_rev=rev))
                    span.add_event(
                        "intent_recorded",
                        outbox(
                            "intent_recorded",
                            store_rev=rev,
                            aggregate_id=aggregate_id,
                            aggregate_seq=aggregate_seq,
                        ),
                    )
            answer = json.dumps({"task_id": task_id, "event_id": event_id}).encode()
            self.send_response(201 if rev is not None else 200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *_):
            pass

    stop = stop_on_sigterm()
    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"listening {server.server_address[1]}", flush=True)
    while not stop.wait(0.2):
        pass
    server.shutdown()
    provider.shutdown()


if __name__ == "__main__":
    main()
