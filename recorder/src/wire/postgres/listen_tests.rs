//! A listening reader's transactions, from the bytes of whole conversations fed one byte at a
//! time and one chunk a message list.
use super::tests::{typed, untyped};
use super::*;
use crate::wire::heard::{Statement, Ways};

/// A value bound to a parameter.
enum Param<'a> {
    Text(&'a str),
    Binary(&'a [u8]),
    Null,
}

fn cstr(text: &str) -> Vec<u8> {
    [text.as_bytes(), b"\0"].concat()
}

fn query(sql: &str) -> Vec<u8> {
    typed(b'Q', &cstr(sql))
}

fn parse(name: &str, sql: &str) -> Vec<u8> {
    typed(b'P', &[cstr(name), cstr(sql), vec![0, 0]].concat())
}

fn bind(statement: &str, params: &[Param]) -> Vec<u8> {
    let mut body = [cstr(""), cstr(statement)].concat();
    body.extend((params.len() as i16).to_be_bytes());
    for p in params {
        body.extend(i16::from(matches!(p, Param::Binary(_))).to_be_bytes());
    }
    body.extend((params.len() as i16).to_be_bytes());
    for p in params {
        match p {
            Param::Text(t) => value(&mut body, Some(t.as_bytes())),
            Param::Binary(b) => value(&mut body, Some(b)),
            Param::Null => value(&mut body, None),
        }
    }
    body.extend([0, 0]);
    typed(b'B', &body)
}

fn value(body: &mut Vec<u8>, v: Option<&[u8]>) {
    match v {
        Some(bytes) => {
            body.extend((bytes.len() as i32).to_be_bytes());
            body.extend(bytes);
        }
        None => body.extend((-1i32).to_be_bytes()),
    }
}

fn describe_portal() -> Vec<u8> {
    typed(b'D', b"P\0")
}

fn execute() -> Vec<u8> {
    typed(b'E', &[cstr(""), vec![0; 4]].concat())
}

fn sync() -> Vec<u8> {
    typed(b'S', b"")
}

fn row_description(names: &[&str]) -> Vec<u8> {
    let mut body = (names.len() as i16).to_be_bytes().to_vec();
    for name in names {
        body.extend(cstr(name));
        body.extend([0; 18]);
    }
    typed(b'T', &body)
}

fn data_row(values: &[Option<&str>]) -> Vec<u8> {
    let mut body = (values.len() as i16).to_be_bytes().to_vec();
    for v in values {
        value(&mut body, v.map(str::as_bytes));
    }
    typed(b'D', &body)
}

fn complete(tag: &str) -> Vec<u8> {
    typed(b'C', &cstr(tag))
}

fn ready(status: u8) -> Vec<u8> {
    typed(b'Z', &[status])
}

fn error() -> Vec<u8> {
    typed(b'E', b"SERROR\0C23505\0Mduplicate key\0\0")
}

/// The extended protocol's replies before an execution's rows.
fn parse_bind_complete() -> Vec<u8> {
    [typed(b'1', b""), typed(b'2', b"")].concat()
}

/// One step of a conversation: from the process (`true`) or the server, its messages.
type Step = (bool, Vec<u8>);

/// The startup, answered: authentication done, ready.
fn hello() -> Vec<Step> {
    vec![
        (true, untyped(196_608)),
        (false, [typed(b'R', &[0; 4]), ready(b'I')].concat()),
    ]
}

/// Plays `steps` to `reader`, each step in one chunk or one byte at a time: what it heard.
fn play(reader: &mut Postgres, steps: &[Step], bytewise: bool) -> Vec<Heard> {
    let losses = Losses::default();
    let mut heard = Vec::new();
    let mut out = Vec::new();
    for (up, bytes) in steps {
        let size = if bytewise { 1 } else { bytes.len().max(1) };
        for chunk in bytes.chunks(size) {
            let flow = if *up {
                reader.request(chunk, &mut out, &losses)
            } else {
                reader.reply(chunk, &mut out, &losses)
            };
            assert_eq!(flow, Flow::Go);
            heard.extend(reader.heard());
        }
    }
    heard
}

/// What a listening reader hears of `steps` (after the startup), the same fed either way.
fn hear(steps: Vec<Step>) -> Vec<Heard> {
    let steps = [hello(), steps].concat();
    let at_once = play(&mut Postgres::listening(), &steps, false);
    let bytewise = play(&mut Postgres::listening(), &steps, true);
    assert_eq!(at_once, bytewise, "the same, however the bytes come");
    at_once
}

/// The statements of the one transaction told.
fn one_committed(heard: Vec<Heard>) -> Vec<Statement> {
    match <[Heard; 1]>::try_from(heard) {
        Ok([Heard::Committed(statements)]) => statements,
        other => panic!("one committed transaction, not {other:?}"),
    }
}

fn statement(sql: &str, tag: &str) -> Statement {
    Statement {
        sql: sql.into(),
        tag: tag.into(),
        ..Statement::default()
    }
}

const INSERT: &str = "INSERT INTO outbox (id, body) VALUES ($1, $2) RETURNING value";

/// An INSERT of the extended protocol as node-pg sends it, and its answer (`status` after).
fn insert(id: &str, status: u8) -> Vec<Step> {
    let ask = [
        parse("", INSERT),
        bind("", &[Param::Text(id), Param::Text("{}")]),
        describe_portal(),
        execute(),
        sync(),
    ];
    let answer = [
        parse_bind_complete(),
        row_description(&["value"]),
        data_row(&[Some("v1")]),
        complete("INSERT 0 1"),
        ready(status),
    ];
    vec![(true, ask.concat()), (false, answer.concat())]
}

fn simple(sql: &str, answer: &[Vec<u8>]) -> Vec<Step> {
    vec![(true, query(sql)), (false, answer.concat())]
}

fn node_pg_transaction() -> Vec<Step> {
    let begin = simple("BEGIN", &[complete("BEGIN"), ready(b'T')]);
    let nextval = simple(
        "SELECT nextval('x') AS n",
        &[
            row_description(&["n"]),
            data_row(&[Some("5")]),
            complete("SELECT 1"),
            ready(b'T'),
        ],
    );
    let commit = simple("COMMIT", &[complete("COMMIT"), ready(b'I')]);
    [begin, insert("7", b'T'), nextval, commit].concat()
}

#[test]
fn a_node_pg_transaction_is_told_once_with_its_four_statements() {
    let statements = one_committed(hear(node_pg_transaction()));
    let inserted = Statement {
        sql: INSERT.into(),
        params: vec![Some("7".into()), Some("{}".into())],
        columns: vec!["value".into()],
        first_row: vec![Some("v1".into())],
        tag: "INSERT 0 1".into(),
    };
    let next = Statement {
        sql: "SELECT nextval('x') AS n".into(),
        columns: vec!["n".into()],
        first_row: vec![Some("5".into())],
        tag: "SELECT 1".into(),
        ..Statement::default()
    };
    assert_eq!(
        statements,
        [
            statement("BEGIN", "BEGIN"),
            inserted,
            next,
            statement("COMMIT", "COMMIT")
        ]
    );
    assert_eq!(statements[1].rows(), 1);
}

#[test]
fn told_when_the_ready_for_query_that_ends_the_commit_is_read() {
    let steps = [hello(), node_pg_transaction()].concat();
    let (last, before) = steps.split_last().unwrap();
    let mut pg = Postgres::listening();
    assert!(play(&mut pg, before, false).is_empty());
    let (up, bytes) = last;
    let (head, tail) = bytes.split_at(bytes.len() - 1);
    assert!(
        play(&mut pg, &[(*up, head.to_vec())], false).is_empty(),
        "Z not ended"
    );
    assert_eq!(play(&mut pg, &[(*up, tail.to_vec())], false).len(), 1);
}

#[test]
fn a_reader_that_does_not_listen_tells_nothing() {
    let steps = [hello(), node_pg_transaction()].concat();
    assert!(play(&mut Postgres::default(), &steps, false).is_empty());
    assert!(play(&mut Postgres::default(), &steps, true).is_empty());
}

#[test]
fn a_rolled_back_transaction_is_not_told() {
    let steps = [
        simple("BEGIN", &[complete("BEGIN"), ready(b'T')]),
        insert("1", b'T'),
        simple("ROLLBACK", &[complete("ROLLBACK"), ready(b'I')]),
    ];
    assert!(hear(steps.concat()).is_empty());
}

#[test]
fn a_transaction_with_an_error_is_not_told_and_the_next_one_is() {
    let failed_insert = vec![
        (
            true,
            [
                parse("", INSERT),
                bind("", &[Param::Text("1")]),
                execute(),
                sync(),
            ]
            .concat(),
        ),
        (
            false,
            [parse_bind_complete(), error(), ready(b'E')].concat(),
        ),
    ];
    let steps = [
        simple("BEGIN", &[complete("BEGIN"), ready(b'T')]),
        failed_insert,
        // A COMMIT of a failed transaction rolls it back.
        simple("COMMIT", &[complete("ROLLBACK"), ready(b'I')]),
        simple("SELECT 1", &[complete("SELECT 1"), ready(b'I')]),
    ];
    let statements = one_committed(hear(steps.concat()));
    assert_eq!(statements, [statement("SELECT 1", "SELECT 1")]);
}

#[test]
fn an_extended_statement_outside_a_transaction_commits_on_its_own() {
    let statements = one_committed(hear(insert("9", b'I')));
    assert_eq!(statements.len(), 1);
    assert_eq!(statements[0].params[0].as_deref(), Some("9"));
    assert_eq!(statements[0].first_row, [Some("v1".to_string())]);
}

#[test]
fn two_executions_before_one_sync_are_one_transaction() {
    let ask = [
        parse("", "INSERT INTO a VALUES ($1)"),
        bind("", &[Param::Text("1")]),
        execute(),
        parse("", "UPDATE b SET n = $1"),
        bind("", &[Param::Text("2")]),
        execute(),
        sync(),
    ];
    let answer = [
        parse_bind_complete(),
        complete("INSERT 0 1"),
        parse_bind_complete(),
        complete("UPDATE 3"),
        ready(b'I'),
    ];
    let statements = one_committed(hear(vec![(true, ask.concat()), (false, answer.concat())]));
    let told: Vec<_> = statements
        .iter()
        .map(|s| (s.sql.as_str(), s.params.clone(), s.tag.as_str()))
        .collect();
    assert_eq!(
        told,
        [
            (
                "INSERT INTO a VALUES ($1)",
                vec![Some("1".into())],
                "INSERT 0 1"
            ),
            ("UPDATE b SET n = $1", vec![Some("2".into())], "UPDATE 3"),
        ]
    );
    assert_eq!(statements[1].rows(), 3);
}

#[test]
fn an_error_drops_what_was_queued_up_to_its_sync_and_no_more() {
    let ask = [
        parse("", "INSERT INTO a VALUES (1)"),
        execute(),
        execute(),
        sync(),
        parse("", "INSERT INTO b VALUES (2)"),
        bind("", &[]),
        execute(),
        sync(),
    ];
    let answer = [
        typed(b'1', b""),
        error(),
        ready(b'I'),
        parse_bind_complete(),
        complete("INSERT 0 1"),
        ready(b'I'),
    ];
    let statements = one_committed(hear(vec![(true, ask.concat()), (false, answer.concat())]));
    assert_eq!(statements[0].sql, "INSERT INTO b VALUES (2)");
}

#[test]
fn a_named_statement_serves_each_later_bind_until_it_is_closed() {
    let run = |params: &[Param]| {
        let ask = [bind("ins", params), execute(), sync()].concat();
        let answer = [typed(b'2', b""), complete("INSERT 0 1"), ready(b'I')].concat();
        vec![(true, ask), (false, answer)]
    };
    let prepare = vec![
        (
            true,
            [parse("ins", "INSERT INTO t VALUES ($1)"), sync()].concat(),
        ),
        (false, [typed(b'1', b""), ready(b'I')].concat()),
    ];
    let close = vec![
        (true, [typed(b'C', b"Sins\0"), sync()].concat()),
        (false, [typed(b'3', b""), ready(b'I')].concat()),
    ];
    let steps = [
        prepare,
        run(&[Param::Text("1")]),
        run(&[Param::Text("2")]),
        close,
        run(&[Param::Text("3")]),
    ];
    let heard = hear(steps.concat());
    let told: Vec<_> = heard
        .into_iter()
        .map(|h| match h {
            Heard::Committed(s) => (s[0].sql.clone(), s[0].params.clone()),
            other => panic!("{other:?}"),
        })
        .collect();
    let sql = "INSERT INTO t VALUES ($1)".to_string();
    assert_eq!(
        told,
        [
            (sql.clone(), vec![Some("1".into())]),
            (sql, vec![Some("2".into())]),
            (String::new(), vec![Some("3".into())]),
        ]
    );
}

#[test]
fn a_null_and_a_binary_param_read_as_none() {
    let params = [Param::Null, Param::Binary(&[0, 0, 0, 1]), Param::Text("x")];
    let ask = [
        parse("", "INSERT INTO t VALUES ($1, $2, $3)"),
        bind("", &params),
        execute(),
        sync(),
    ];
    let answer = [parse_bind_complete(), complete("INSERT 0 1"), ready(b'I')];
    let statements = one_committed(hear(vec![(true, ask.concat()), (false, answer.concat())]));
    assert_eq!(statements[0].params, [None, None, Some("x".to_string())]);
}

#[test]
fn a_simple_query_of_several_statements_tells_each_with_its_text() {
    let answer = [
        complete("BEGIN"),
        complete("INSERT 0 1"),
        row_description(&["id"]),
        data_row(&[None]),
        data_row(&[Some("2")]),
        complete("SELECT 2"),
        complete("COMMIT"),
        ready(b'I'),
    ];
    let sql = "BEGIN; INSERT INTO t VALUES ('a;b'); SELECT id FROM t; COMMIT;";
    let statements = one_committed(hear(simple(sql, &answer)));
    let texts: Vec<_> = statements.iter().map(|s| s.sql.as_str()).collect();
    assert_eq!(
        texts,
        [
            "BEGIN",
            "INSERT INTO t VALUES ('a;b')",
            "SELECT id FROM t",
            "COMMIT"
        ]
    );
    assert_eq!(
        (
            statements[2].columns.clone(),
            statements[2].first_row.clone()
        ),
        (vec!["id".to_string()], vec![None])
    );
    assert!(
        statements[1].columns.is_empty(),
        "the next statement's columns only"
    );
}

#[test]
fn a_statement_too_big_to_keep_is_told_without_its_sql() {
    let huge = format!(
        "INSERT INTO t VALUES ('{}')",
        "x".repeat(frames::WHOLE_AT_MOST)
    );
    let steps = simple(&huge, &[complete("INSERT 0 1"), ready(b'I')]);
    let steps = [hello(), steps].concat();
    let heard = play(&mut Postgres::listening(), &steps, false);
    assert_eq!(one_committed(heard), [statement("", "INSERT 0 1")]);
}

#[test]
fn past_the_bound_of_replies_awaited_the_connection_tells_nothing_more() {
    let many = vec![execute(); listen::MOST_HELD + 1].concat();
    let flood = vec![
        (
            true,
            [parse("", "SELECT 1"), bind("", &[]), many, sync()].concat(),
        ),
        (
            false,
            [parse_bind_complete(), complete("SELECT 1"), ready(b'I')].concat(),
        ),
    ];
    let steps = [hello(), flood, insert("1", b'I')].concat();
    assert_eq!(
        play(&mut Postgres::listening(), &steps, false),
        [held_too_much()]
    );
}

/// What a connection past a bound says, once.
fn held_too_much() -> Heard {
    Heard::Unread {
        way: Ways::Both,
        why: "it holds more than the reader follows",
    }
}

#[test]
fn a_listening_connection_that_turns_to_tls_says_it_is_no_longer_read() {
    let losses = Losses::default();
    let mut pg = Postgres::listening();
    let mut out = Vec::new();
    pg.request(&untyped(SSL_REQUEST), &mut out, &losses);
    pg.reply(b"S\x16\x03\x01", &mut out, &losses);
    pg.reply(b"more", &mut out, &losses);
    let unread = Heard::Unread {
        way: Ways::Both,
        why: "the connection turned to TLS",
    };
    assert_eq!(pg.heard(), [unread]);
}

#[test]
fn the_commit_whose_reply_is_lost_is_still_told() {
    let losses = Losses::default();
    let mut pg = Postgres::listening();
    play(&mut pg, &hello(), false);
    losses.arm(WireFault::LoseCommitReply);
    let mut out = Vec::new();
    let ask = [
        query("BEGIN"),
        query("INSERT INTO t VALUES (1)"),
        query("COMMIT"),
    ]
    .concat();
    pg.request(&ask, &mut out, &losses);
    let passed = [
        complete("BEGIN"),
        ready(b'T'),
        complete("INSERT 0 1"),
        ready(b'T'),
    ]
    .concat();
    let answer = [passed.clone(), complete("COMMIT"), ready(b'I')].concat();
    out.clear();
    assert_eq!(pg.reply(&answer, &mut out, &losses), Flow::Reset);
    assert_eq!(out, passed, "the commit's reply is lost");
    let statements = one_committed(pg.heard());
    let tags: Vec<_> = statements.iter().map(|s| s.tag.as_str()).collect();
    assert_eq!(tags, ["BEGIN", "INSERT 0 1", "COMMIT"]);
    assert_eq!(losses.drain().len(), 1);
}

#[test]
fn past_the_bound_of_bytes_held_the_connection_tells_nothing_more() {
    let big = format!("INSERT INTO t VALUES ('{}')", "x".repeat(1_000_000));
    let statements = listen::MOST_HELD_BYTES / big.len() + 1;
    let one = simple(&big, &[complete("INSERT 0 1"), ready(b'T')]);
    let steps = [
        hello(),
        simple("BEGIN", &[complete("BEGIN"), ready(b'T')]),
        vec![one; statements].concat(),
        simple("COMMIT", &[complete("COMMIT"), ready(b'I')]),
        insert("1", b'I'),
    ];
    let mut pg = Postgres::listening();
    assert_eq!(play(&mut pg, &steps.concat(), false), [held_too_much()]);
    let within = [
        hello(),
        simple(&big, &[complete("INSERT 0 1"), ready(b'I')]),
    ];
    assert_eq!(
        play(&mut Postgres::listening(), &within.concat(), false).len(),
        1
    );
}
