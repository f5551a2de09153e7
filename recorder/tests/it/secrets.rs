//! What `run_start.detail.system` shows of the system file's credentials: none. A URL's
//! password, a `password=` in a query string or a libpq connection string, an `Authorization`
//! header of the tasks' HTTP request and the values of `OTEL_EXPORTER_OTLP_HEADERS` are masked.

use std::path::Path;

use crate::common::{self, output_text, rows};
use outbox_trace::{Kind, Step};

/// A role that answers every POST with 200 and exports nothing.
const SERVER: &str = r#"
import http.server, sys

class Ok(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.end_headers()
    def log_message(self, *args):
        pass

http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Ok).serve_forever()
"#;

#[test]
fn no_credential_of_the_system_file_reaches_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("server.py"), SERVER).unwrap();
    let system = dir.path().join("system.toml");
    std::fs::write(
        &system,
        r#"
name = "masked"
[env]
DATABASE_URL = "postgres://app:s3cret-0@db/x"
QUERY_URL = "postgres://db/x?sslmode=disable&password=s3cret-1&user=app"
PG_DSN = "host=db password=s3cret-2 user=app"
OTEL_EXPORTER_OTLP_HEADERS = "api-key=s3cret-3,tenant=s3cret-5"
[roles.api]
command = ["python3", "server.py", "${port}", "--password=s3cret-6"]
port = true
[tasks]
count = 1
http = { method = "POST", url = "http://127.0.0.1:${roles.api.port}/tasks",
         headers = { Authorization = "Bearer s3cret-4" } }
"#,
    )
    .unwrap();
    let (output, out) = common::record_system(dir.path(), Path::new(&system), &[]);
    assert!(output.status.success(), "{}", output_text(&output));
    let events = outbox_trace::read_trace(&out).unwrap().events;
    let Step::RunStart(start) = common::step(rows(&events, Kind::RunStart)[0]) else {
        unreachable!()
    };
    let shown = start
        .system
        .expect("the system file is recorded")
        .to_string();
    assert!(!shown.contains("s3cret"), "{shown}");
    for kept in [
        "postgres://app:***@db/x",
        "sslmode=disable&password=***&user=app",
        "host=db password=*** user=app",
        "api-key=***,tenant=***",
    ] {
        assert!(shown.contains(kept), "{kept} in {shown}");
    }
}
