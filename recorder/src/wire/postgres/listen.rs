//! What a listening PostgreSQL reader hears: the statements each transaction ran, told as one
//! [`Heard::Committed`] when the ReadyForQuery that ends the transaction (status `I`) is read
//! from the server, if it committed.
//!
//! The process's requests queue what the server will answer, in order: each statement of a
//! simple Query, each Execute of the extended protocol (with the SQL its Parse gave and the
//! parameters its Bind gave), and each Sync (or Query, or FunctionCall) that the server closes
//! with a ReadyForQuery. The server's replies take them off: a RowDescription gives the columns
//! of the next statement that completes, its first DataRow its first row, its CommandComplete its
//! tag, and the statement joins the transaction. An ErrorResponse fails the transaction (nothing
//! of it is told) and drops what was queued up to the next Sync. At the ReadyForQuery with status
//! `I` the transaction is over: it committed when it had no error and either ended with a
//! `COMMIT` tag or had no `BEGIN` (statements outside a transaction block commit on their own).
//! A transaction that recovered from an error (`ROLLBACK TO SAVEPOINT`) and committed is not
//! told: which of its statements the savepoint undid is not read.
//!
//! A message too big to keep whole (see [`super::frames::WHOLE_AT_MOST`]) is framed but not
//! read: the transaction it belongs to is still told (it did commit, and its other statements
//! are as heard), with the parts that message carried left empty: the SQL of a Parse or Query,
//! the parameters of a Bind, the columns of a RowDescription, the first row of a DataRow.
//!
//! What one connection holds is bounded: past [`MOST_HELD`] replies awaited, prepared statements
//! or portals, or past [`MOST_HELD_BYTES`] of text held (SQL, parameters, rows, the statements of
//! the transaction so far), the reader stops telling on that connection, and says so once
//! ([`Heard::Unread`]), as it does when the connection turns to TLS.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use super::decode::{self, Closed, Formats};
use super::split;
use crate::wire::heard::{Heard, Statement, Ways};

/// The most replies awaited, prepared statements or portals one connection holds.
pub(super) const MOST_HELD: usize = 4096;

/// The most bytes of text one connection holds.
pub(super) const MOST_HELD_BYTES: usize = 64 * 1024 * 1024;

/// An execution awaited: the SQL and parameters it runs with (empty when not known).
#[derive(Debug, Default)]
struct Execution {
    sql: Arc<str>,
    params: Vec<Option<String>>,
    /// The formats its Bind asked for the result columns.
    results: Formats,
}

/// What the server will answer next, in order.
#[derive(Debug)]
enum Awaited {
    /// An Execute's completion.
    Execution(Execution),
    /// The statements of a simple Query still to complete, then its ReadyForQuery.
    Query {
        statements: VecDeque<String>,
        /// Its whole text, for a completion past the statements split from it.
        whole: String,
    },
    /// A ReadyForQuery (after a Sync or a FunctionCall).
    Ready,
}

impl Awaited {
    /// The bytes of text it holds of its own (an execution's SQL is its statement's).
    fn size(&self) -> usize {
        match self {
            Awaited::Execution(e) => size_of_values(&e.params),
            // Its text, and the statements split from it.
            Awaited::Query { whole, .. } => 2 * whole.len(),
            Awaited::Ready => 0,
        }
    }
}

/// A portal, as its Bind made it.
#[derive(Debug, Default)]
struct Portal {
    sql: Arc<str>,
    params: Vec<Option<String>>,
    results: Formats,
}

/// The bytes of text of `values`.
fn size_of_values(values: &[Option<String>]) -> usize {
    values.iter().flatten().map(String::len).sum::<usize>() + std::mem::size_of_val(values)
}

/// The bytes a statement holds.
fn size_of_statement(s: &Statement) -> usize {
    std::mem::size_of::<Statement>()
        + s.sql.len()
        + s.tag.len()
        + size_of_values(&s.params)
        + size_of_values(&s.first_row)
        + s.columns.iter().map(String::len).sum::<usize>()
}

/// One connection's listening state.
#[derive(Debug, Default)]
pub(super) struct Listen {
    /// Prepared statements by name (the unnamed one under `""`): their SQL, empty when unknown.
    statements: HashMap<String, Arc<str>>,
    portals: HashMap<String, Portal>,
    awaited: VecDeque<Awaited>,
    /// The bytes of text held (see [`MOST_HELD_BYTES`]).
    held: usize,
    /// Of them, the bytes the transaction's statements hold.
    transaction_held: usize,
    /// The columns of the next statement to complete, and their formats.
    columns: Option<(Vec<String>, Formats)>,
    /// The first row of the statement being answered.
    first_row: Option<Vec<Option<String>>>,
    /// The statements of the transaction so far.
    transaction: Vec<Statement>,
    /// The transaction had an error.
    failed: bool,
    /// Past a bound: nothing more is told on this connection.
    stopped: bool,
    /// Told, not yet taken.
    heard: Vec<Heard>,
}

impl Listen {
    /// What it heard since the last call.
    pub(super) fn take_heard(&mut self) -> Vec<Heard> {
        std::mem::take(&mut self.heard)
    }

    /// A message from the process: its kind, its body as kept, whether that is all of it.
    pub(super) fn request(&mut self, kind: u8, body: &[u8], whole: bool) {
        if self.stopped {
            return;
        }
        match kind {
            b'Q' => {
                let text = if whole {
                    decode::string(body)
                } else {
                    String::new()
                };
                let awaited = Awaited::Query {
                    statements: split::statements(&text).into(),
                    whole: text,
                };
                self.await_reply(awaited);
            }
            b'P' => self.parsed(body, whole),
            b'B' => self.bound(body),
            b'E' => self.executed(body),
            b'S' | b'F' => self.await_reply(Awaited::Ready),
            b'C' => match decode::close(body) {
                Some(Closed::Statement(name)) => {
                    let forgotten = self.statements.remove(&name);
                    self.release(forgotten.map_or(0, |sql| sql.len()));
                }
                Some(Closed::Portal(name)) => {
                    let forgotten = self.portals.remove(&name);
                    self.release(forgotten.map_or(0, |p| size_of_values(&p.params)));
                }
                None => {}
            },
            _ => {}
        }
    }

    /// A message from the server: its kind, its body as kept, whether that is all of it.
    pub(super) fn reply(&mut self, kind: u8, body: &[u8], whole: bool) {
        if self.stopped {
            return;
        }
        match kind {
            b'T' => {
                let described = whole.then(|| decode::row_description(body)).flatten();
                self.columns = Some(described.unwrap_or_default());
            }
            b'n' => self.columns = Some(Default::default()),
            b'D' if self.first_row.is_none() => {
                let formats = self.result_formats();
                let row = whole.then(|| decode::data_row(body, &formats)).flatten();
                self.first_row = Some(row.unwrap_or_default());
            }
            b'C' => self.completed(decode::string(body)),
            b'I' => self.empty_query(),
            b's' => self.suspended(),
            b'E' => self.failed(),
            b'Z' => self.ready(body.first().copied()),
            _ => {}
        }
    }

    /// A Parse: the statement it names now has its SQL (empty when too big to keep).
    fn parsed(&mut self, body: &[u8], whole: bool) {
        let Some((name, sql)) = decode::parse(body) else {
            return;
        };
        let sql: Arc<str> = sql.filter(|_| whole).unwrap_or_default().into();
        if self.statements.len() >= MOST_HELD && !self.statements.contains_key(&name) {
            return self.stop("prepared statements");
        }
        if !self.hold(sql.len()) {
            return;
        }
        let replaced = self.statements.insert(name, sql);
        self.release(replaced.map_or(0, |old| old.len()));
    }

    /// A Bind: the portal it names runs its statement's SQL with its parameters.
    fn bound(&mut self, body: &[u8]) {
        let Some(bind) = decode::bind(body) else {
            return;
        };
        if self.portals.len() >= MOST_HELD && !self.portals.contains_key(&bind.portal) {
            return self.stop("portals");
        }
        let portal = Portal {
            sql: self
                .statements
                .get(&bind.statement)
                .cloned()
                .unwrap_or_else(|| "".into()),
            params: bind.params.unwrap_or_default(),
            results: bind.results,
        };
        if !self.hold(size_of_values(&portal.params)) {
            return;
        }
        let replaced = self.portals.insert(bind.portal, portal);
        self.release(replaced.map_or(0, |old| size_of_values(&old.params)));
    }

    /// An Execute: its portal's execution is awaited (with no SQL when the portal is unknown).
    fn executed(&mut self, body: &[u8]) {
        let portal = decode::execute(body).and_then(|name| self.portals.get(&name));
        let execution = portal.map_or_else(Execution::default, |p| Execution {
            sql: p.sql.clone(),
            params: p.params.clone(),
            results: p.results.clone(),
        });
        self.await_reply(Awaited::Execution(execution));
    }

    /// Queues a reply awaited, within [`MOST_HELD`].
    fn await_reply(&mut self, awaited: Awaited) {
        if self.awaited.len() >= MOST_HELD {
            return self.stop("replies awaited");
        }
        if self.hold(awaited.size()) {
            self.awaited.push_back(awaited);
        }
    }

    /// Takes the reply awaited first off the queue.
    fn take_awaited(&mut self) -> Option<Awaited> {
        let awaited = self.awaited.pop_front()?;
        self.release(awaited.size());
        Some(awaited)
    }

    /// Takes the reply awaited first off the queue if it is an execution.
    fn take_execution(&mut self) -> Option<Execution> {
        match self.awaited.front() {
            Some(Awaited::Execution(_)) => match self.take_awaited() {
                Some(Awaited::Execution(e)) => Some(e),
                _ => None,
            },
            _ => None,
        }
    }

    /// The formats of the rows being answered: the RowDescription's, else the Bind's.
    fn result_formats(&self) -> Formats {
        match (&self.columns, self.awaited.front()) {
            (Some((_, formats)), _) => formats.clone(),
            (None, Some(Awaited::Execution(e))) => e.results.clone(),
            _ => Formats::default(),
        }
    }

    /// A CommandComplete: the statement awaited first completed with `tag`.
    fn completed(&mut self, tag: String) {
        let (sql, params) = match self.take_execution() {
            Some(e) => (e.sql.to_string(), e.params),
            None => match self.awaited.front_mut() {
                Some(Awaited::Query { statements, whole }) => (
                    statements.pop_front().unwrap_or_else(|| whole.clone()),
                    Vec::new(),
                ),
                _ => Default::default(),
            },
        };
        let (columns, _) = self.columns.take().unwrap_or_default();
        let statement = Statement {
            sql,
            params,
            columns,
            first_row: self.first_row.take().unwrap_or_default(),
            tag,
        };
        let size = size_of_statement(&statement);
        if self.hold(size) {
            self.transaction_held += size;
            self.transaction.push(statement);
        }
    }

    /// An EmptyQueryResponse: an execution of an empty statement is over, with nothing to tell.
    fn empty_query(&mut self) {
        self.take_execution();
        self.clear_rows();
    }

    /// A PortalSuspended: the execution stopped at its row limit; the next Execute of the
    /// portal goes on with it, and its rows so far are kept for the statement that completes.
    fn suspended(&mut self) {
        self.take_execution();
    }

    /// An ErrorResponse: the transaction failed, and the server skips what was queued up to the
    /// next Sync (or the rest of the Query).
    fn failed(&mut self) {
        self.failed = true;
        self.clear_rows();
        while self.take_execution().is_some() {}
        if let Some(Awaited::Query { statements, .. }) = self.awaited.front_mut() {
            statements.clear();
        }
    }

    /// A ReadyForQuery with its transaction `status`: `I` ends the transaction.
    fn ready(&mut self, status: Option<u8>) {
        while let Some(awaited) = self.take_awaited() {
            if !matches!(awaited, Awaited::Execution(_)) {
                break;
            }
        }
        self.clear_rows();
        match status {
            Some(b'I') => self.transaction_over(),
            Some(b'E') => self.failed = true,
            _ => {}
        }
    }

    /// The transaction is over: told if it committed.
    fn transaction_over(&mut self) {
        let statements = std::mem::take(&mut self.transaction);
        let held = std::mem::take(&mut self.transaction_held);
        self.release(held);
        let failed = std::mem::take(&mut self.failed);
        if !failed && !statements.is_empty() && committed(&statements) {
            self.heard.push(Heard::Committed(statements));
        }
    }

    /// Counts `bytes` more held: whether that is within [`MOST_HELD_BYTES`] (past it, stops).
    fn hold(&mut self, bytes: usize) -> bool {
        self.held += bytes;
        if self.held > MOST_HELD_BYTES {
            self.stop("bytes of text");
            return false;
        }
        true
    }

    /// Counts `bytes` held no more.
    fn release(&mut self, bytes: usize) {
        self.held = self.held.saturating_sub(bytes);
    }

    /// Forgets the columns and first row heard for a statement that did not complete.
    fn clear_rows(&mut self) {
        self.columns = None;
        self.first_row = None;
    }

    /// Past a bound: tells nothing more on this connection, and lets go of what it holds.
    fn stop(&mut self, what: &str) {
        tracing::warn!(
            held = what,
            "a PostgreSQL connection holds more than the recorder follows; its transactions \
             are no longer read"
        );
        self.unread("it holds more than the reader follows");
    }

    /// Tells nothing more on this connection, and says so (once); lets go of what it holds.
    pub(super) fn unread(&mut self, why: &'static str) {
        if self.stopped {
            return;
        }
        let mut heard = std::mem::take(&mut self.heard);
        heard.push(Heard::Unread {
            way: Ways::Both,
            why,
        });
        *self = Listen {
            stopped: true,
            heard,
            ..Listen::default()
        };
    }
}

impl Listen {
    /// Whether the server may have committed something not told yet: a transaction that
    /// completed a `COMMIT` (or statements outside a block) awaits its ReadyForQuery, or a
    /// statement still to be answered is a `COMMIT` or runs outside a transaction block.
    pub(super) fn commit_awaited(&self) -> bool {
        if self.stopped {
            return false;
        }
        let done = &self.transaction;
        if !done.is_empty() && !self.failed && committed(done) {
            return true;
        }
        let mut open = done
            .iter()
            .any(|s| s.tag == "BEGIN" || s.tag == "START TRANSACTION");
        let sent = self.awaited.iter().flat_map(|a| match a {
            Awaited::Execution(e) => vec![&*e.sql],
            Awaited::Query { statements, .. } => statements.iter().map(String::as_str).collect(),
            Awaited::Ready => Vec::new(),
        });
        for sql in sent {
            let first = sql.split_whitespace().next().unwrap_or_default();
            let is = |word: &str| first.eq_ignore_ascii_case(word);
            if is("begin") || is("start") {
                open = true;
            } else if is("rollback") || is("abort") {
                open = false;
            } else if is("commit") || is("end") || !open {
                return true;
            }
        }
        false
    }
}

/// Whether a transaction that ended without error committed: it ended with a `COMMIT` tag, or it
/// never opened a transaction block.
fn committed(statements: &[Statement]) -> bool {
    let opened = statements
        .iter()
        .any(|s| s.tag == "BEGIN" || s.tag == "START TRANSACTION");
    !opened || statements.last().is_some_and(|s| s.tag == "COMMIT")
}
