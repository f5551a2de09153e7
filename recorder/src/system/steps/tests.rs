//! The mapping's check, and its reading of what a proxy heard.

use std::collections::BTreeMap;

use outbox_trace::{Kind, Step};

use super::spec::StepsSpec;
use super::{NoStep, Reading, Steps};
use crate::fault::protocols::Wire;
use crate::system::file::ServiceSpec;
use crate::wire::heard::{Delivery, Heard, Message, Statement, Ways};

fn services() -> BTreeMap<String, ServiceSpec> {
    let spec = |wire| ServiceSpec {
        command: Vec::new(),
        ready: Default::default(),
        ready_timeout: std::time::Duration::from_secs(1),
        wire,
    };
    BTreeMap::from([
        ("postgres".to_string(), spec(Wire::Postgres)),
        ("nats".to_string(), spec(Wire::Nats)),
        ("redis".to_string(), spec(Wire::Redis)),
    ])
}

fn check(toml_text: &str) -> Result<Steps, String> {
    #[derive(serde::Deserialize)]
    struct File {
        steps: StepsSpec,
    }
    let file: File = toml::from_str(toml_text).map_err(|e| e.to_string())?;
    Steps::check(&file.steps, &services())
}

const EXAMPLE: &str = r#"
[steps.task_accepted]
on = "postgres"
commit = "insert into outbox"
event_id = "outbox.event_id"
task_id = "outbox.task_id"

[steps.effect_committed]
on = "postgres"
commit = "insert into results"
event_id = "results.event_id"
task_id = "results.task_id"
amount = "results.amount"
counter = "counters.value"
counter_key = "counters.counter_key"

[[steps.duplicate_suppressed]]
on = "postgres"
commit = "insert into processed"
rows = 0
event_id = "processed.event_id"

[steps.delivered]
on = "nats"
subject = "orders"
event_id = "payload:/event_id"
task_id = "payload:/task_id"

[steps.publish_attempt]
on = "nats"
subject = "orders"
event_id = "header:Nats-Msg-Id"
"#;

#[test]
fn a_mapping_that_cannot_match_says_why_in_one_line() {
    let cases = [
        ("[steps.nonsense]\non = \"postgres\"\ncommit = \"insert into t\"\nevent_id = \"t.a\"", "no step kind"),
        ("[steps.acked]\non = \"pg\"\nsubject = \"o\"\nevent_id = \"payload:/e\"", "no such service"),
        ("[steps.acked]\non = \"redis\"\nsubject = \"o\"\nevent_id = \"payload:/e\"", "its wire is redis"),
        ("[steps.acked]\non = \"postgres\"\ncommit = \"insert into t\"\nevent_id = \"t.a\"", "not acked"),
        ("[steps.redelivered]\non = \"nats\"\nsubject = \"o\"\nevent_id = \"payload:/e\"", "covers redeliveries"),
        ("[steps.outbox_marked]\non = \"postgres\"\ncommit = \"mark outbox\"\nevent_id = \"t.a\"", "expected insert into TABLE"),
        ("[steps.outbox_marked]\non = \"postgres\"\nevent_id = \"t.a\"", "names its statement"),
        ("[steps.outbox_marked]\non = \"postgres\"\ncommit = \"update outbox\"\nevent_id = \"payload:/e\"", "a postgres rule reads"),
        ("[steps.outbox_marked]\non = \"postgres\"\ncommit = \"update outbox\"\ntask_id = \"outbox.t\"", "needs `event_id`"),
        ("[steps.effect_committed]\non = \"postgres\"\ncommit = \"insert into r\"\nevent_id = \"r.e\"", "needs `task_id`"),
        ("[steps.acked]\non = \"nats\"\nevent_id = \"payload:/e\"", "subject ="),
        ("[steps.acked]\non = \"nats\"\nsubject = \"o\"\nstore_rev = \"payload:/r\"\nevent_id = \"payload:/e\"", "a nats rule cannot"),
        ("[steps.acked]\non = \"nats\"\nsubject = \"o\"\nbroker_seq = \"payload:/r\"\nevent_id = \"payload:/e\"", "come from the wire"),
        ("[steps.outbox_marked]\non = \"postgres\"\ncommit = \"update outbox\"\nevent_id = \"outbox.e\"\nstore_rev = \"outbox.v\"\n[steps.intent_recorded]\non = \"postgres\"\ncommit = \"insert into outbox\"\nevent_id = \"outbox.e\"", "map it on every commit rule, or on none"),
        ("[steps.acked]\non = \"nats\"\nsubject = \"o\"\nevent_id = \"event\"", "expected TABLE.COLUMN"),
    ];
    for (text, says) in cases {
        let error = check(text).expect_err(text);
        assert!(error.contains(says), "{text}\n -> {error}");
        assert!(!error.contains('\n'), "{error}");
    }
    let steps = check(EXAMPLE).expect("the example checks");
    assert_eq!(steps.rules().len(), 5);
    assert!(steps.reads(Kind::Redelivered));
    assert!(steps.listens_to("nats") && !steps.listens_to("redis"));
    assert_eq!(
        steps.kinds(),
        [
            Kind::TaskAccepted,
            Kind::PublishAttempt,
            Kind::Delivered,
            Kind::Redelivered,
            Kind::EffectCommitted,
            Kind::DuplicateSuppressed
        ]
    );
}

fn statement(sql: &str, params: &[&str], tag: &str) -> Statement {
    Statement {
        sql: sql.into(),
        params: params.iter().map(|p| Some(p.to_string())).collect(),
        tag: tag.into(),
        ..Statement::default()
    }
}

fn worker_commit(event: &str, inserted: u64, effect: bool) -> Heard {
    let mut statements = vec![
        statement("BEGIN", &[], "BEGIN"),
        statement(
            "INSERT INTO processed (event_id, committed_by) VALUES ($1, $2) ON CONFLICT (event_id) DO NOTHING",
            &[event, "w"],
            &format!("INSERT 0 {inserted}"),
        ),
    ];
    if effect {
        let mut counter = statement(
            "INSERT INTO counters (counter_key, value) VALUES ($1, $2) ON CONFLICT (counter_key) DO UPDATE SET value = counters.value + EXCLUDED.value RETURNING value",
            &["agg-1", "3"],
            "INSERT 0 1",
        );
        counter.columns = vec!["value".into()];
        counter.first_row = vec![Some("13".into())];
        statements.push(counter);
        statements.push(statement(
            "INSERT INTO results (event_id, task_id, amount) VALUES ($1, $2, $3)",
            &[event, "task-1", "3"],
            "INSERT 0 1",
        ));
    }
    statements.push(statement("COMMIT", &[], "COMMIT"));
    Heard::Committed(statements)
}

#[test]
fn a_committed_transaction_gives_its_steps_with_one_store_rev() {
    let mut reading = Reading::new(check(EXAMPLE).unwrap());
    let found = reading.read("postgres", "worker", 0, &worker_commit("evt-1", 1, true));
    let [Ok(Step::EffectCommitted {
        about,
        store_rev,
        amount,
        counter,
        counter_key,
        note,
        ..
    })] = found.as_slice()
    else {
        panic!("{found:?}");
    };
    assert_eq!(
        (about.event_id.as_str(), about.task_id.as_str()),
        ("evt-1", "task-1")
    );
    assert_eq!(
        (*store_rev, *amount, *counter),
        (Some(1), Some(3), Some(13))
    );
    assert_eq!(counter_key.as_deref(), Some("agg-1"));
    assert_eq!(note.source.as_deref(), Some("wire"));
    // The key found: suppressed; the next commit numbered 2.
    let found = reading.read("postgres", "worker-2", 0, &worker_commit("evt-1", 0, false));
    assert!(
        matches!(found.as_slice(), [Ok(Step::DuplicateSuppressed { .. })]),
        "{found:?}"
    );
    // A key found and the effect applied anyway (a racy dedup): an effect, no suppression.
    let found = reading.read("postgres", "worker-2", 0, &worker_commit("evt-1", 0, true));
    assert!(
        matches!(found.as_slice(), [Ok(Step::EffectCommitted { .. })]),
        "{found:?}"
    );
    // Another service's traffic, or a transaction no rule names: nothing.
    assert!(reading
        .read("nats", "worker", 0, &worker_commit("evt-1", 1, true))
        .is_empty());
    let other = Heard::Committed(vec![statement(
        "UPDATE tasks SET done = true WHERE task_id = $1",
        &["t"],
        "UPDATE 1",
    )]);
    assert!(reading.read("postgres", "worker", 0, &other).is_empty());
}

#[test]
fn a_matching_fact_without_an_id_is_refused_with_its_reason() {
    let mut reading = Reading::new(check(EXAMPLE).unwrap());
    let heard = Heard::Committed(vec![statement(
        "INSERT INTO outbox (event_id) VALUES ($1)",
        &["evt-1"],
        "INSERT 0 1",
    )]);
    let found = reading.read("postgres", "api", 0, &heard);
    let [Err(NoStep::Lacks(missing))] = found.as_slice() else {
        panic!("{found:?}")
    };
    assert_eq!(missing.kind, Kind::TaskAccepted);
    assert_eq!(missing.fields, [outbox_trace::Field::TaskId]);
}

#[test]
fn traffic_passing_unread_refuses_each_kind_read_from_that_direction_once() {
    let mut reading = Reading::new(check(EXAMPLE).unwrap());
    let kinds = |reading: &mut Reading, service, way| -> Vec<Kind> {
        let why = "lost";
        let found = reading.read(service, "worker", 1, &Heard::Unread { way, why });
        let mut kinds: Vec<Kind> = found
            .into_iter()
            .map(|f| match f {
                Err(NoStep::Unread { kind, why: "lost" }) => kind,
                other => panic!("{other:?}"),
            })
            .collect();
        kinds.sort();
        kinds
    };
    let mut commits = [
        Kind::TaskAccepted,
        Kind::EffectCommitted,
        Kind::DuplicateSuppressed,
    ];
    commits.sort();
    for way in [Ways::Requests, Ways::Replies, Ways::Both] {
        assert_eq!(kinds(&mut reading, "postgres", way), commits, "{way:?}");
    }
    let replies = [Kind::Delivered, Kind::Redelivered];
    assert_eq!(kinds(&mut reading, "nats", Ways::Replies), replies);
    assert_eq!(
        kinds(&mut reading, "nats", Ways::Requests),
        [Kind::PublishAttempt]
    );
    assert_eq!(kinds(&mut reading, "nats", Ways::Both).len(), 3);
    assert_eq!(kinds(&mut reading, "redis", Ways::Both), []);
}

#[test]
fn messages_give_publishes_counted_per_life_and_deliveries_by_their_count() {
    let mut reading = Reading::new(check(EXAMPLE).unwrap());
    let message = Message {
        subject: "orders".into(),
        headers: vec![("Nats-Msg-Id".into(), "evt-1".into())],
        payload: br#"{"event_id":"evt-1","task_id":"task-1"}"#.to_vec(),
    };
    for n in 1..=2 {
        let found = reading.read("nats", "relay", 0, &Heard::Published(message.clone()));
        assert!(
            matches!(found.as_slice(), [Ok(Step::PublishAttempt { attempt: Some(a), .. })] if *a == n),
            "{found:?}"
        );
    }
    let found = reading.read("nats", "relay", 1, &Heard::Published(message.clone()));
    assert!(matches!(
        found.as_slice(),
        [Ok(Step::PublishAttempt {
            attempt: Some(1),
            ..
        })]
    ));
    let delivery = |delivered| Delivery {
        message: message.clone(),
        stream: "ORDERS".into(),
        consumer: "workers".into(),
        delivered,
        stream_seq: 7,
    };
    let found = reading.read("nats", "worker", 0, &Heard::Delivered(delivery(1)));
    assert!(matches!(
        found.as_slice(),
        [Ok(Step::Delivered {
            attempt: Some(1),
            broker_seq: Some(7),
            ..
        })]
    ));
    let found = reading.read("nats", "worker", 0, &Heard::Delivered(delivery(3)));
    assert!(matches!(
        found.as_slice(),
        [Ok(Step::Redelivered {
            attempt: Some(3),
            broker_seq: Some(7),
            ..
        })]
    ));
    // No rule for acks, nor for another subject.
    assert!(reading
        .read("nats", "worker", 0, &Heard::Acked(delivery(3)))
        .is_empty());
    let elsewhere = Message {
        subject: "audit".into(),
        ..message
    };
    assert!(reading
        .read("nats", "relay", 0, &Heard::Published(elsewhere))
        .is_empty());
}

#[test]
fn two_rules_of_one_kind_give_one_step_per_event_and_transaction() {
    let text = format!(
        "{EXAMPLE}\n[[steps.duplicate_suppressed]]\non = \"postgres\"\ncommit = \"select from processed\"\nevent_id = \"processed.event_id\"\n"
    );
    let mut reading = Reading::new(check(&text).unwrap());
    let Heard::Committed(mut statements) = worker_commit("evt-1", 0, false) else {
        unreachable!()
    };
    let mut lookup = statement(
        "SELECT store_rev FROM processed WHERE event_id = $1",
        &["evt-1"],
        "SELECT 1",
    );
    lookup.columns = vec!["store_rev".into()];
    lookup.first_row = vec![Some("4".into())];
    statements.insert(2, lookup);
    let found = reading.read("postgres", "worker", 0, &Heard::Committed(statements));
    assert!(
        matches!(found.as_slice(), [Ok(Step::DuplicateSuppressed { .. })]),
        "{found:?}"
    );
}

#[test]
fn a_batch_gives_a_step_per_matching_statement_with_that_statement_s_ids() {
    let mut reading = Reading::new(check(EXAMPLE).unwrap());
    let insert = |event: &str, tag: &str| {
        statement(
            "INSERT INTO processed (event_id) VALUES ($1) ON CONFLICT DO NOTHING",
            &[event],
            tag,
        )
    };
    // Two keys found, one inserted: two suppressions, each with its own event.
    let heard = Heard::Committed(vec![
        insert("evt-1", "INSERT 0 1"),
        insert("evt-2", "INSERT 0 0"),
        insert("evt-3", "INSERT 0 0"),
    ]);
    let found = reading.read("postgres", "worker", 0, &heard);
    let events: Vec<String> = found
        .iter()
        .map(|f| match f {
            Ok(Step::DuplicateSuppressed { about, .. }) => about.event_id.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(events, ["evt-2", "evt-3"]);
}

#[test]
fn a_store_rev_mapped_on_every_commit_rule_replaces_the_wire_s_order() {
    let text = EXAMPLE
        .replace(
            "task_id = \"outbox.task_id\"",
            "task_id = \"outbox.task_id\"\nstore_rev = \"outbox.version\"",
        )
        .replace(
            "counter_key = \"counters.counter_key\"",
            "counter_key = \"counters.counter_key\"\nstore_rev = \"counters.version\"",
        )
        .replace(
            "event_id = \"processed.event_id\"",
            "event_id = \"processed.event_id\"\nstore_rev = \"processed.$9\"",
        );
    let mut reading = Reading::new(check(&text).expect("every commit rule maps store_rev"));
    let effect = |version: &str| {
        Heard::Committed(vec![
            statement(
                "INSERT INTO results (event_id, task_id, amount) VALUES ($1, $2, $3)",
                &["evt-1", "task-1", "2"],
                "INSERT 0 1",
            ),
            Statement {
                columns: vec!["value".into(), "counter_key".into(), "version".into()],
                first_row: vec![Some("2".into()), Some("k".into()), Some(version.into())],
                ..statement("UPDATE counters SET value = value + $1", &["2"], "UPDATE 1")
            },
        ])
    };
    let revs: Vec<Option<i64>> = ["41", "not a number"]
        .iter()
        .flat_map(|v| reading.read("postgres", "worker", 1, &effect(v)))
        .map(|f| match f.unwrap() {
            Step::EffectCommitted { store_rev, .. } => store_rev,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        revs,
        [Some(41), None],
        "the column's, or none: never the wire's"
    );
}

#[test]
fn only_what_a_rule_could_read_concerns_the_listener() {
    let steps = check(EXAMPLE).unwrap();
    let commit = |sql: &str| Heard::Committed(vec![statement(sql, &[], "INSERT 0 1")]);
    let message = |subject: &str| Message {
        subject: subject.into(),
        ..Message::default()
    };
    assert!(steps.concerns("postgres", &commit("INSERT INTO outbox (id) VALUES ($1)")));
    assert!(!steps.concerns(
        "postgres",
        &commit("SELECT id FROM outbox WHERE sent = false")
    ));
    assert!(!steps.concerns("postgres", &commit("INSERT INTO audit VALUES ($1)")));
    assert!(!steps.concerns("nats", &commit("INSERT INTO outbox (id) VALUES ($1)")));
    assert!(steps.concerns("nats", &Heard::Published(message("orders"))));
    assert!(!steps.concerns("nats", &Heard::Published(message("audit"))));
    let unread = Heard::Unread {
        way: Ways::Both,
        why: "x",
    };
    assert!(steps.concerns("postgres", &unread));
}
