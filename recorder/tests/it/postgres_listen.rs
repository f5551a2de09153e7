//! The listening PostgreSQL reader against a real server (the node-postgres example's
//! `postgres.sh`): a client that speaks the protocol itself, through a listening proxy, runs a
//! transaction of simple and extended statements, one that rolls back and one that fails; the
//! proxy tells the committed ones only, with what the server answered.
//!
//! PostgreSQL's server must be installed (`scripts/deps.sh`): a missing one fails the test.

use std::path::Path;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use outbox_recorder::fault::protocols::Wire;
use outbox_recorder::wire::heard::{Heard, Statement};
use outbox_recorder::wire::{Listener, Proxy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/node-postgres/postgres.sh")
}

/// A PostgreSQL server on a free port, stopped (fast shutdown) when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(dir: &Path) -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let child = Command::new("sh")
            .arg(script())
            .args(["serve", dir.to_str().unwrap(), &port.to_string()])
            .spawn()
            .unwrap();
        let mut server = Server { child, port };
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            let ready = Command::new("sh")
                .arg(script())
                .args(["ready", &port.to_string()])
                .status()
                .unwrap();
            if ready.success() {
                return server;
            }
            if let Some(exit) = server.child.try_wait().unwrap() {
                panic!("PostgreSQL did not start ({exit}): postgres.sh says why above");
            }
            assert!(Instant::now() < until, "PostgreSQL not ready within 60 s");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
        let _ = self.child.wait();
    }
}

fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![kind];
    m.extend((body.len() as u32 + 4).to_be_bytes());
    m.extend(body);
    m
}

fn cstr(text: &str) -> Vec<u8> {
    [text.as_bytes(), b"\0"].concat()
}

/// Sends `bytes`, then reads the server's messages up to its ReadyForQuery: their kinds.
async fn ask(client: &mut TcpStream, bytes: &[u8]) -> Vec<u8> {
    client.write_all(bytes).await.unwrap();
    let mut kinds = Vec::new();
    loop {
        let mut head = [0u8; 5];
        client.read_exact(&mut head).await.unwrap();
        let len = u32::from_be_bytes(head[1..].try_into().unwrap()) as usize;
        let mut body = vec![0u8; len - 4];
        client.read_exact(&mut body).await.unwrap();
        kinds.push(head[0]);
        if head[0] == b'Z' {
            return kinds;
        }
    }
}

fn query(sql: &str) -> Vec<u8> {
    message(b'Q', &cstr(sql))
}

/// Parse, Bind (text parameters, `None` a NULL), Describe, Execute, Sync of `sql`.
fn extended(sql: &str, params: &[Option<&str>]) -> Vec<u8> {
    let mut bind = [cstr(""), cstr(""), vec![0, 0]].concat();
    bind.extend((params.len() as i16).to_be_bytes());
    for p in params {
        match p {
            Some(text) => {
                bind.extend((text.len() as i32).to_be_bytes());
                bind.extend(text.as_bytes());
            }
            None => bind.extend((-1i32).to_be_bytes()),
        }
    }
    bind.extend([0, 0]);
    [
        message(b'P', &[cstr(""), cstr(sql), vec![0, 0]].concat()),
        message(b'B', &bind),
        message(b'D', b"P\0"),
        message(b'E', &[cstr(""), vec![0; 4]].concat()),
        message(b'S', b""),
    ]
    .concat()
}

/// A listening proxy to `port`, and what its listener hears.
async fn listening_proxy(port: u16) -> (Proxy, Arc<Mutex<Vec<Heard>>>) {
    let (to, mut told) = tokio::sync::mpsc::channel(16);
    let listener = Listener {
        to,
        actor: "api".into(),
        service: "pg".into(),
        missed: Default::default(),
        wants: Arc::new(|_: &Heard| true),
    };
    let upstream = ([127, 0, 0, 1], port).into();
    let proxy = Proxy::start_listening(upstream, Wire::Postgres, Some(listener))
        .await
        .unwrap();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let keep = heard.clone();
    tokio::spawn(async move {
        while let Some(t) = told.recv().await {
            keep.lock().unwrap().extend(t.heard);
        }
    });
    (proxy, heard)
}

/// A client through the proxy at `port`, past its startup as user `outbox`.
async fn connected(port: u16) -> TcpStream {
    let mut client = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let mut startup = 196_608u32.to_be_bytes().to_vec();
    startup.extend(
        [
            cstr("user"),
            cstr("outbox"),
            cstr("database"),
            cstr("postgres"),
        ]
        .concat(),
    );
    startup.push(0);
    let mut framed = (startup.len() as u32 + 4).to_be_bytes().to_vec();
    framed.extend(startup);
    ask(&mut client, &framed).await;
    client
}

#[tokio::test]
async fn a_real_server_s_committed_transactions_are_told_with_what_it_answered() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let (proxy, heard) = listening_proxy(server.port).await;
    let mut client = connected(proxy.port()).await;
    let create = "CREATE TABLE outbox (id int, body text, value text DEFAULT 'v1'); \
                  CREATE SEQUENCE x";
    ask(&mut client, &query(create)).await;
    let insert = "INSERT INTO outbox (id, body) VALUES ($1, $2) RETURNING value";
    ask(&mut client, &query("BEGIN")).await;
    ask(&mut client, &extended(insert, &[Some("7"), None])).await;
    ask(&mut client, &query("SELECT nextval('x') AS n")).await;
    ask(&mut client, &query("COMMIT")).await;
    ask(&mut client, &query("BEGIN")).await;
    ask(&mut client, &extended(insert, &[Some("8"), None])).await;
    ask(&mut client, &query("ROLLBACK")).await;
    let failed = ask(
        &mut client,
        &extended("INSERT INTO missing VALUES ($1)", &[Some("1")]),
    )
    .await;
    assert!(failed.contains(&b'E'), "an error: {failed:?}");
    let told = heard.lock().unwrap().clone();
    let transactions: Vec<Vec<Statement>> = told
        .into_iter()
        .map(|h| match h {
            Heard::Committed(statements) => statements,
            other => panic!("{other:?}"),
        })
        .collect();
    let tags: Vec<Vec<&str>> = transactions
        .iter()
        .map(|t| t.iter().map(|s| s.tag.as_str()).collect())
        .collect();
    assert_eq!(
        tags,
        [
            vec!["CREATE TABLE", "CREATE SEQUENCE"],
            vec!["BEGIN", "INSERT 0 1", "SELECT 1", "COMMIT"],
        ]
    );
    let inserted = &transactions[1][1];
    assert_eq!(inserted.sql, insert);
    assert_eq!(inserted.params, [Some("7".to_string()), None]);
    assert_eq!(inserted.columns, ["value"]);
    assert_eq!(inserted.first_row, [Some("v1".to_string())]);
    let next = &transactions[1][2];
    assert_eq!(
        (next.columns.as_slice(), next.first_row.as_slice()),
        (&["n".to_string()][..], &[Some("1".to_string())][..])
    );
    assert_eq!(transactions[0][1].sql, "CREATE SEQUENCE x");
}

#[tokio::test]
async fn a_commit_whose_answer_a_fault_drops_is_still_told_for_the_server_committed_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let (proxy, heard) = listening_proxy(server.port).await;
    let mut client = connected(proxy.port()).await;
    ask(&mut client, &query("CREATE TABLE results (id int)")).await;
    ask(&mut client, &query("BEGIN")).await;
    ask(&mut client, &query("INSERT INTO results VALUES (1)")).await;
    let hold = Duration::from_secs(2);
    proxy
        .apply(outbox_recorder::fault::spec::WireFault::DropReplies { hold })
        .unwrap();
    client.write_all(&query("COMMIT")).await.unwrap();
    let committed = |heard: &[Heard]| {
        heard
            .iter()
            .any(|h| matches!(h, Heard::Committed(s) if s.iter().any(|s| s.tag == "INSERT 0 1")))
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !committed(&heard.lock().unwrap()) {
        assert!(Instant::now() < deadline, "{:?}", heard.lock().unwrap());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut answer = [0u8; 1];
    let read = tokio::time::timeout(Duration::from_millis(300), client.read(&mut answer)).await;
    assert!(read.is_err(), "the process heard no answer: {read:?}");
    let unread = heard
        .lock()
        .unwrap()
        .iter()
        .any(|h| matches!(h, Heard::Unread { .. }));
    assert!(!unread, "the reader kept its place");
}

#[tokio::test]
async fn a_reset_that_cuts_off_a_commit_s_answer_says_replies_pass_unread_and_an_idle_one_says_nothing(
) {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let (proxy, heard) = listening_proxy(server.port).await;
    let mut idle = connected(proxy.port()).await;
    ask(&mut idle, &query("SELECT 1")).await;
    proxy
        .apply(outbox_recorder::fault::spec::WireFault::Cut)
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let unread = |heard: &[Heard]| {
        heard
            .iter()
            .filter(|h| matches!(h, Heard::Unread { .. }))
            .count()
    };
    assert_eq!(unread(&heard.lock().unwrap()), 0, "nothing was awaited");
    // A statement outside a transaction block commits on its own: cut while it runs.
    let mut busy = connected(proxy.port()).await;
    busy.write_all(&query("SELECT pg_sleep(1)")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    proxy
        .apply(outbox_recorder::fault::spec::WireFault::Cut)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while unread(&heard.lock().unwrap()) == 0 {
        assert!(Instant::now() < deadline, "{:?}", heard.lock().unwrap());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let said = heard.lock().unwrap().clone();
    assert!(
        said.iter().any(|h| matches!(
            h,
            Heard::Unread {
                way: outbox_recorder::wire::heard::Ways::Replies,
                ..
            }
        )),
        "{said:?}"
    );
}
