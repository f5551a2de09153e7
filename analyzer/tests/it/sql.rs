//! `analyzer sql` against `analyzer check`: on every committed fixture, every example recording
//! and a corpus of generated traces (the protocol variants of `variants/` and one edit per
//! verdict, reason and note of every invariant), the statement run on DuckDB and on DataFusion
//! (their Python packages) gives exactly the native verdicts, violation counts and reasons. Spark
//! (pyspark, local mode) runs the same agreement on a few traces; `OUTBOX_SPARK_ALL=1` runs it on
//! all of them. A missing package fails the test: `scripts/deps.sh` installs them.
//!
//! Also here: a partitioned directory checks as its single file does, and the usage errors of
//! `analyzer sql`.

use crate::common;
use crate::variants;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use arrow_array::RecordBatch;
use outbox_trace::{Event, Kind::*, TraceWriter};
use serde_json::Value;

#[path = "../sql/rules.rs"]
mod rules;

/// `(run_id, scenario, invariant)` -> `(verdict, violations, reason)`; also, under the invariant
/// [`SCENARIO`], the scenario's verdict and its named faults that never fired, and under
/// `("", "", EXIT)` the exit code `check` gives (the SQL's: from the scenarios' verdicts).
type Verdicts = BTreeMap<(String, String, String), (String, i64, Option<String>)>;

/// The key of a scenario's own verdict in [`Verdicts`].
const SCENARIO: &str = "(scenario)";

/// The key of the exit code in [`Verdicts`].
const EXIT: &str = "(exit)";

/// The exit code of `check` on scenarios of these verdicts: the worst (nothing to check is
/// unknown).
fn exit_code(verdicts: &[&str]) -> i64 {
    if verdicts.contains(&"invalid") {
        1
    } else if verdicts.contains(&"unknown") || verdicts.is_empty() {
        3
    } else {
        0
    }
}

/// Adds the exit code of the scenario verdicts `v` holds.
fn with_exit(mut v: Verdicts) -> Verdicts {
    let scenarios: Vec<&str> = v
        .iter()
        .filter(|((_, _, i), _)| i == SCENARIO)
        .map(|(_, (verdict, _, _))| verdict.as_str())
        .collect();
    let code = exit_code(&scenarios);
    v.insert(
        (String::new(), String::new(), EXIT.into()),
        (code.to_string(), code, None),
    );
    v
}

fn analyzer() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_analyzer"))
}

fn runner() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sql/run_sql.py")
}

/// Writes events (renumbered) as given.
fn write_events(dir: &Path, name: &str, events: &[Event]) -> PathBuf {
    common::write(dir, name, events)
}

/// The lab trace edited by `f`.
fn edit(f: impl FnOnce(&mut Vec<Event>)) -> Vec<Event> {
    let mut t = lab();
    f(&mut t);
    t
}

fn set_observed(t: &mut [Event], detail: &str) {
    let at = find(t, Observed, None);
    t[at].detail = Some(detail.into());
}

/// Generated traces: the variants and one edit per verdict, reason and note.
fn corpus() -> Vec<(&'static str, Vec<Event>)> {
    let mut c: Vec<(&'static str, Vec<Event>)> = vec![
        ("lab", lab()),
        ("crashed-lab", variants::crashed_lab()),
        ("ack-before-commit", variants::ack_before_commit()),
        ("no-dedup", variants::no_dedup()),
    ];
    c.push((
        "task-under-two-events",
        edit(|t| {
            let at = find(t, EffectCommitted, Some("evt-3"));
            t[at].task_id = Some("t-2".into());
        }),
    ));
    c.push((
        "intent-other-rev",
        edit(|t| {
            let at = find(t, IntentRecorded, Some("evt-2"));
            t[at].store_rev = Some(99);
        }),
    ));
    c.push((
        "intent-missing",
        edit(|t| {
            t.remove(find(t, IntentRecorded, Some("evt-1")));
        }),
    ));
    c.push((
        "intent-without-rev",
        edit(|t| {
            let at = find(t, IntentRecorded, Some("evt-1"));
            t[at].store_rev = None;
            let at = find(t, TaskAccepted, Some("evt-1"));
            t[at].store_rev = Some(77);
        }),
    ));
    c.push((
        "no-store-rev",
        edit(|t| {
            for e in t.iter_mut() {
                e.store_rev = None;
            }
        }),
    ));
    c.push((
        "mark-before-puback",
        edit(|t| {
            let mark = t.remove(find(t, OutboxMarked, Some("evt-3")));
            let at = find(t, PublishAcked, Some("evt-3"));
            t.insert(at, mark);
        }),
    ));
    c.push((
        "aggregate-out-of-order",
        edit(|t| {
            let start = find(t, PublishAttempt, Some("evt-3"));
            let evt3: Vec<_> = t.drain(start..start + 3).collect();
            let at = find(t, PublishAttempt, Some("evt-1"));
            for (i, e) in evt3.into_iter().enumerate() {
                t.insert(at + i, e);
            }
        }),
    ));
    c.push((
        "aggregate-on-publish-rows",
        edit(|t| {
            for e in t.iter_mut() {
                if e.kind != PublishAttempt {
                    e.aggregate_id = None;
                    e.aggregate_seq = None;
                }
            }
            let at = find(t, PublishAttempt, Some("evt-1"));
            t[at].aggregate_id = Some("acct-1".into());
            t[at].aggregate_seq = Some(5);
            let at = find(t, PublishAttempt, Some("evt-2"));
            t[at].aggregate_id = Some("acct-1".into());
            t[at].aggregate_seq = Some(4);
        }),
    ));
    c.push((
        "no-aggregate-info",
        edit(|t| {
            for e in t.iter_mut() {
                e.aggregate_id = None;
                e.aggregate_seq = None;
            }
        }),
    ));
    c.push((
        "counter-step",
        edit(|t| {
            let at = find(t, EffectCommitted, Some("evt-2"));
            t[at].counter = Some(6);
            let at = find(t, EffectCommitted, Some("evt-3"));
            t[at].counter = Some(11);
        }),
    ));
    c.push((
        "observed-counter-off",
        edit(|t| {
            set_observed(
                t,
                r#"{"stream_messages":3,"counter":"12","results":3,"dedup_keys":3}"#,
            )
        }),
    ));
    c.push((
        "counter-start",
        edit(|t| {
            t[0].detail = Some(r#"{"tasks":3,"counter_start":"5"}"#.into());
            for e in t.iter_mut() {
                if let Some(c) = e.counter.as_mut() {
                    *c += 5;
                }
            }
            set_observed(
                t,
                r#"{"stream_messages":3,"counter":15,"results":3,"dedup_keys":3}"#,
            );
        }),
    ));
    c.push((
        "no-observed-counter",
        edit(|t| set_observed(t, r#"{"stream_messages":3,"results":3,"dedup_keys":3}"#)),
    ));
    c.push((
        "counter-as-text",
        // Numbers spelled as text read as numbers (a value of the wrong type, such as a float
        // or a boolean, is bad input for `check`, which no statement can say).
        edit(|t| set_observed(t, r#"{"counter":"10","results":"3 "}"#)),
    ));
    c.push((
        "observed-results-off",
        edit(|t| set_observed(t, r#"{"counter":10,"results":4,"processed":2}"#)),
    ));
    c.push((
        "observed-all-off",
        edit(|t| {
            set_observed(
                t,
                r#"{"counter":10,"results":4,"dedup_keys":1,"stream_messages":2,"tasks":5,"outbox_published":1,"outbox_pending":1}"#,
            )
        }),
    ));
    c.push((
        "observed-intents",
        edit(|t| {
            set_observed(
                t,
                r#"{"counter":10,"tasks":3,"outbox_published":2,"outbox_pending":1}"#,
            )
        }),
    ));
    c.push((
        "observed-no-totals",
        edit(|t| set_observed(t, r#"{"counter":10,"phase":"end"}"#)),
    ));
    c.push((
        "observed-not-json",
        edit(|t| set_observed(t, "counter: 10")),
    ));
    c.push((
        "no-observed",
        edit(|t| {
            t.remove(find(t, Observed, None));
        }),
    ));
    for (name, twice) in [("external-replayed", false), ("external-twice", true)] {
        c.push((
            name,
            edit(|t| {
                let at = find(t, EffectCommitted, Some("evt-1"));
                let mut calls = vec![
                    ev(ExternalRequest, "worker").event("evt-1").attempt(1),
                    ev(ExternalApplied, "receiver").event("evt-1"),
                    ev(ExternalRequest, "worker").event("evt-1").attempt(2),
                ];
                calls.push(if twice {
                    ev(ExternalApplied, "receiver").event("evt-1")
                } else {
                    ev(ExternalReplayed, "receiver").event("evt-1")
                });
                for (i, e) in calls.into_iter().enumerate() {
                    t.insert(at + i, e);
                }
            }),
        ));
    }
    let lost_third = || {
        edit(|t| {
            t.retain(|e| {
                e.event_id.as_deref() != Some("evt-3")
                    || !matches!(e.kind, Delivered | EffectCommitted | Acked)
            });
            set_observed(
                t,
                r#"{"stream_messages":3,"counter":5,"results":2,"dedup_keys":2}"#,
            );
        })
    };
    c.push(("lost-task", lost_third()));
    for (name, end) in [
        ("not-recovered", r#"{"recovered":false}"#),
        ("recovered-null", r#"{"recovered":null}"#),
    ] {
        let mut t = lost_third();
        let at = find(&t, RunEnd, None);
        t[at].detail = Some(end.into());
        c.push((name, t));
    }
    c.push((
        "no-run-end",
        edit(|t| {
            t.remove(find(t, RunEnd, None));
        }),
    ));
    c.push((
        "ack-without-event",
        edit(|t| {
            let at = find(t, Acked, Some("evt-1"));
            t[at].event_id = None;
        }),
    ));
    c.push((
        "commit-without-task-and-amount",
        edit(|t| {
            let at = find(t, EffectCommitted, Some("evt-1"));
            t[at].task_id = None;
            t[at].amount = None;
            let at = find(t, TaskAccepted, Some("evt-2"));
            t[at].task_id = None;
        }),
    ));
    c.push((
        "early-ack-then-crash",
        edit(|t| {
            let commit = find(t, EffectCommitted, Some("evt-3"));
            let ack = t.remove(find(t, Acked, Some("evt-3")));
            t[commit] = ack;
            t.insert(
                commit + 1,
                ev(Crash, "worker").detail(r#"{"point":"after-ack"}"#),
            );
            t.insert(commit + 2, ev(Restart, "worker").inc(1));
            set_observed(
                t,
                r#"{"stream_messages":3,"counter":5,"results":2,"dedup_keys":2}"#,
            );
        }),
    ));
    // A worker life that ends without its crash row while a later one exists: the early ACK and
    // the lost task it causes may be spans that life never exported.
    c.push((
        "lossy-life",
        edit(|t| {
            let commit = find(t, EffectCommitted, Some("evt-3"));
            let ack = t.remove(find(t, Acked, Some("evt-3")));
            t[commit] = ack;
            t.insert(commit + 1, ev(Restart, "worker").inc(1));
            set_observed(
                t,
                r#"{"stream_messages":3,"counter":5,"results":2,"dedup_keys":2}"#,
            );
        }),
    ));
    // Several acks before their commits, beyond the examples kept, one of them in a lossy life.
    c.push((
        "many-early-acks",
        edit(|t| {
            for e in ["evt-1", "evt-2", "evt-3"] {
                let commit = find(t, EffectCommitted, Some(e));
                let ack = find(t, Acked, Some(e));
                let a = t.remove(ack);
                t.insert(commit, a);
            }
            let mut more = Vec::new();
            for n in 4..=6 {
                let e = format!("evt-{n}");
                more.push(ev(Delivered, "worker-2").event(&e).attempt(1).broker(n));
                more.push(ev(Acked, "worker-2").event(&e).broker(n));
            }
            more.push(ev(Restart, "worker-2").inc(1));
            let at = find(t, Observed, None);
            for (i, e) in more.into_iter().enumerate() {
                t.insert(at + i, e);
            }
        }),
    ));
    c.extend(crate::evidence::corpus());
    c.extend(rules::corpus());
    // Two scenarios in one file, one broken.
    c.push(("two-scenarios", {
        let mut t = lab();
        t.extend(variants::ack_before_commit().into_iter().map(|mut e| {
            e.scenario = "ack-before-commit".into();
            e
        }));
        t
    }));
    c
}

/// Writes the corpus (the last trace with its rows stored in reverse order) and returns the
/// paths, with the committed fixtures and example recordings.
fn traces(dir: &Path) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths: Vec<PathBuf> = Vec::new();
    for sub in ["tests/fixtures", "../traces/examples"] {
        let mut found: Vec<PathBuf> = std::fs::read_dir(root.join(sub))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
            .collect();
        found.sort();
        paths.extend(found);
    }
    for (name, events) in corpus() {
        paths.push(write_events(dir, &format!("{name}.parquet"), &events));
    }
    // Rows in any order: the same lab trace stored backwards.
    let mut events = variants::crashed_lab();
    renumber(&mut events);
    events.reverse();
    let path = dir.join("reversed.parquet");
    let mut w = TraceWriter::create(&path, None).unwrap();
    w.write(&events).unwrap();
    w.finish().unwrap();
    paths.push(path);
    paths
}

/// The native verdicts of `analyzer check --json`.
fn native(path: &Path) -> Verdicts {
    let out = Command::new(analyzer())
        .args(["check", "--json"])
        .arg(path)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{}: {e}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let mut v = Verdicts::new();
    for s in doc["scenarios"].as_array().unwrap() {
        v.insert(
            (
                s["run_id"].as_str().unwrap().into(),
                s["scenario"].as_str().unwrap().into(),
                SCENARIO.into(),
            ),
            (
                s["verdict"].as_str().unwrap().into(),
                s["unfired_named"].as_i64().unwrap(),
                None,
            ),
        );
        for i in s["invariants"].as_array().unwrap() {
            let count =
                i["violations"].as_array().unwrap().len() as i64 + i["more"].as_i64().unwrap();
            v.insert(
                (
                    s["run_id"].as_str().unwrap().into(),
                    s["scenario"].as_str().unwrap().into(),
                    i["id"].as_str().unwrap().into(),
                ),
                (
                    i["verdict"].as_str().unwrap().into(),
                    count,
                    i["reason"].as_str().map(str::to_string),
                ),
            );
        }
    }
    let v = with_exit(v);
    let code = i64::from(out.status.code().unwrap());
    assert_eq!(v[&(String::new(), String::new(), EXIT.into())].1, code);
    v
}

/// The verdicts of the SQL on `engine`, per trace.
fn on_engine(engine: &str, paths: &[PathBuf]) -> BTreeMap<String, Verdicts> {
    let out = Command::new("python3")
        .arg(runner())
        .arg(engine)
        .arg(analyzer())
        .args(paths)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "the {engine} runner failed (scripts/deps.sh installs the Python packages): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: BTreeMap<String, Vec<Value>> = serde_json::from_slice(&out.stdout).unwrap();
    doc.into_iter()
        .map(|(path, rows)| {
            let mut v = Verdicts::new();
            for r in &rows {
                let s = |k: &str| r[k].as_str().unwrap().to_string();
                v.insert(
                    (s("run_id"), s("scenario"), s("invariant")),
                    (
                        s("verdict"),
                        r["violations"].as_i64().unwrap(),
                        r["reason"].as_str().map(str::to_string),
                    ),
                );
                v.insert(
                    (s("run_id"), s("scenario"), SCENARIO.into()),
                    (
                        s("scenario_verdict"),
                        r["unfired_named"].as_i64().unwrap(),
                        None,
                    ),
                );
            }
            (path, with_exit(v))
        })
        .collect()
}

/// Asserts the engine agrees with the native checker on every trace; returns the SQL verdicts.
fn agree(engine: &str, paths: &[PathBuf]) -> BTreeMap<String, Verdicts> {
    let got = on_engine(engine, paths);
    let mut wrong = Vec::new();
    for path in paths {
        let want = native(path);
        let have = got.get(path.to_str().unwrap()).cloned().unwrap_or_default();
        assert!(!want.is_empty(), "{}: no verdicts", path.display());
        for key in want.keys().chain(have.keys()) {
            if want.get(key) != have.get(key) {
                wrong.push(format!(
                    "{}: {key:?}: native {:?}, {engine} {:?}",
                    path.file_name().unwrap().to_string_lossy(),
                    want.get(key),
                    have.get(key)
                ));
            }
        }
    }
    wrong.dedup();
    assert!(
        wrong.is_empty(),
        "{} disagreements:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    got
}

/// Each rule of `rules` shows in the SQL's verdicts as `rules::SHOWN` says.
fn every_rule_shows(got: &BTreeMap<String, Verdicts>) {
    let mut wrong = Vec::new();
    for &(trace, inv, verdict, n, reason) in rules::SHOWN {
        let (_, v) = got
            .iter()
            .find(|(p, _)| Path::new(p).file_stem().unwrap() == trace)
            .unwrap_or_else(|| panic!("no trace {trace}"));
        let (_, have) = v.iter().find(|(k, _)| k.2 == inv).unwrap();
        let said = have.2.as_deref().unwrap_or("");
        if have.0 != verdict || have.1 != n || !said.contains(reason) {
            wrong.push(format!("{trace} {inv}: {have:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Every invariant fails on some trace, and the SQL says so too (agreement already holds): the
/// SQL detects each violation the native checker detects. `sources-agree` is the exception: it
/// compares the sources of a scenario that reads steps from the wire, which the statement leaves
/// `unknown` (see `analyzer/src/sql/sources_agree.rs`); it passes here, with its note.
fn every_invariant_fails_somewhere(got: &BTreeMap<String, Verdicts>) {
    let judged = outbox_analyzer::check::Invariant::ALL
        .iter()
        .filter(|inv| inv.id() != "sources-agree");
    for inv in judged {
        let fails = got
            .values()
            .flat_map(|v| v.iter())
            .any(|((_, _, id), (verdict, n, _))| id == inv.id() && verdict == "fail" && *n > 0);
        assert!(fails, "no trace makes the SQL fail {}", inv.id());
    }
    for inv in outbox_analyzer::check::Invariant::ALL {
        let passes = got
            .values()
            .flat_map(|v| v.iter())
            .any(|((_, _, id), (v, _, _))| id == inv.id() && v == "pass");
        assert!(passes, "no trace makes {} pass", inv.id());
    }
}

#[test]
fn duckdb_gives_the_native_verdicts_on_every_trace() {
    let dir = tempfile::tempdir().unwrap();
    let got = agree("duckdb", &traces(dir.path()));
    every_invariant_fails_somewhere(&got);
    every_rule_shows(&got);
}

#[test]
fn datafusion_gives_the_native_verdicts_on_every_trace() {
    let dir = tempfile::tempdir().unwrap();
    let got = agree("datafusion", &traces(dir.path()));
    every_invariant_fails_somewhere(&got);
    every_rule_shows(&got);
}

#[test]
fn spark_gives_the_native_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let all = traces(dir.path());
    // A valid recording, a broken one, the lossy-life, skipped-rows and no-run-end edits, a
    // scenario without commit rows, a broken step of a per-key counter, equal offsets in two
    // partitions, and one trace of each cross-cutting rule whose text Spark reads with its own
    // functions;
    // every trace with OUTBOX_SPARK_ALL=1.
    let few = [
        "pyarrow_ack_before_commit.parquet",
        "etcd_split_outbox.parquet",
        "lossy-life.parquet",
        "commit-without-task-and-amount.parquet",
        "recovered-null.parquet",
        "no-commit-rows.parquet",
        "counter-per-key-step.parquet",
        "rabbitmq-standard-spans.parquet",
        "two-copies.parquet",
        "refused-publish-acked.parquet",
        "named-json-fault-never-fired.parquet",
        "interrupted-wrong-step.parquet",
        "lost-commit-reply.parquet",
        "kafka-second-copy-in-order.parquet",
    ];
    let chosen: Vec<PathBuf> = if std::env::var_os("OUTBOX_SPARK_ALL").is_some_and(|v| v == "1") {
        all
    } else {
        all.into_iter()
            .filter(|p| few.iter().any(|f| p.ends_with(f)))
            .collect()
    };
    assert!(chosen.len() >= few.len());
    agree("spark", &chosen);
}

#[test]
fn the_witness_statement_lists_rows_of_failing_invariants_only() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_events(dir.path(), "t.parquet", &variants::ack_before_commit());
    let out = Command::new(analyzer())
        .args(["sql", "--dialect", "duckdb", "--witnesses", "2"])
        .arg("--source")
        .arg(&trace)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let script = r#"
import duckdb, sys, json
statements = [s for s in sys.stdin.read().split(";\n") if s.strip()]
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
rows = con.execute(statements[1]).fetchall()
print(json.dumps([[r[2], int(r[3]), r[6]] for r in rows]))
"#;
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<(String, u64, String)> = serde_json::from_slice(&out.stdout).unwrap();
    let failing: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    let native = native(&trace);
    let native_failing: std::collections::BTreeSet<&str> = native
        .iter()
        .filter(|(_, (verdict, _, _))| verdict == "fail")
        .map(|((_, _, id), _)| id.as_str())
        .collect();
    assert!(failing.contains("ack-after-commit"), "{failing:?}");
    assert_eq!(failing, native_failing);
    // At most 2 per invariant; the early ack is among them.
    assert!(rows.iter().filter(|r| r.0 == "ack-after-commit").count() <= 2);
    assert!(rows
        .iter()
        .any(|r| r.0 == "ack-after-commit" && r.2 == "acked"));
}

/// `batch` without the columns named.
fn without(batch: &RecordBatch, drop: &[&str]) -> RecordBatch {
    let schema = batch.schema();
    let keep: Vec<usize> = (0..schema.fields().len())
        .filter(|&i| !drop.contains(&schema.field(i).name().as_str()))
        .collect();
    batch.project(&keep).unwrap()
}

fn write_batch(path: &Path, batch: &RecordBatch) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let file = std::fs::File::create(path).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
}

/// The `check --json` scenarios without the file paths, keyed by run and scenario.
fn scenarios(path: &Path) -> (i32, BTreeMap<(String, String), Value>) {
    let out = Command::new(analyzer())
        .args(["check", "--json"])
        .arg(path)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut by = BTreeMap::new();
    for s in doc["scenarios"].as_array().unwrap() {
        let mut s = s.clone();
        s.as_object_mut().unwrap().remove("file");
        let key = (
            s["run_id"].as_str().unwrap().to_string(),
            s["scenario"].as_str().unwrap().to_string(),
        );
        by.insert(key, s);
    }
    (out.status.code().unwrap(), by)
}

#[test]
fn a_partitioned_directory_checks_as_its_single_file() {
    let dir = tempfile::tempdir().unwrap();
    // Two scenarios, one broken, in one file; then split hive-style by run and scenario, the
    // partition columns left out of the rows, plus a file that keeps every column.
    let mut events = lab();
    events.extend(variants::ack_before_commit().into_iter().map(|mut e| {
        e.scenario = "ack-before-commit".into();
        e
    }));
    renumber(&mut events);
    let single = dir.path().join("single.parquet");
    let mut w = TraceWriter::create(&single, None).unwrap();
    w.write(&events).unwrap();
    w.finish().unwrap();

    let root = dir.path().join("partitioned");
    let mut by_scenario: BTreeMap<String, Vec<Event>> = BTreeMap::new();
    for e in &events {
        by_scenario
            .entry(e.scenario.clone())
            .or_default()
            .push(e.clone());
    }
    for (scenario, rows) in &by_scenario {
        let (head, tail) = rows.split_at(rows.len() / 2);
        let part = root.join(format!("run_id=run-1/scenario={scenario}"));
        let batch = outbox_trace::to_batch(head).unwrap();
        write_batch(
            &part.join("part-0.parquet"),
            &without(&batch, &["run_id", "scenario"]),
        );
        let batch = outbox_trace::to_batch(tail).unwrap();
        write_batch(
            &part.join("deeper/part-1.parquet"),
            &without(&batch, &["scenario"]),
        );
    }
    std::fs::write(root.join("_SUCCESS"), b"").unwrap();

    let (code_single, want) = scenarios(&single);
    let (code_dir, got) = scenarios(&root);
    assert_eq!(code_single, 1);
    assert_eq!(code_dir, code_single);
    assert_eq!(got, want);

    // The SQL reads the same directory on DuckDB (`--source`) with the same verdicts.
    let engine = on_engine("duckdb", std::slice::from_ref(&root));
    let sql = &engine[root.to_str().unwrap()];
    assert_eq!(sql, &native(&single));

    // A directory without Parquet files, and one whose file lacks a column its path does not
    // give, are bad input.
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(empty.join("run_id=r")).unwrap();
    let bad = dir.path().join("bad");
    let batch = outbox_trace::to_batch(&events).unwrap();
    write_batch(
        &bad.join("run_id=r/part-0.parquet"),
        &without(&batch, &["scenario"]),
    );
    for (path, says) in [(&empty, "no .parquet file"), (&bad, "scenario")] {
        let out = Command::new(analyzer())
            .arg("check")
            .arg(path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    }
}

#[test]
fn sql_usage_errors_are_one_line_and_exit_2() {
    for args in [
        &["sql", "--dialect", "datafusion", "--source", "t.parquet"][..],
        &["sql", "--dialect", "duckdb", "--invariant", "no-such-thing"][..],
        &["sql", "--dialect", "oracle"][..],
    ] {
        let out = Command::new(analyzer()).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    let out = Command::new(analyzer())
        .args(["sql", "--dialect", "datafusion", "--source", "t.parquet"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("register the trace as a table named `trace`"),
        "{stderr}"
    );

    // One invariant asked for: only its rows, and only its tables.
    let out = Command::new(analyzer())
        .args(["sql", "--dialect", "spark", "--invariant", "counter-exact"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("'counter-exact'"));
    assert!(!text.contains("'single-effect'"));
}
