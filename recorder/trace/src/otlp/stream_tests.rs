//! The mapping of a file of spans in bounded memory gives what mapping it whole gives: the same
//! rows, in the same order, with the same `seq`, `ts_ns` and `incarnation`, and the same errors,
//! whatever the bound at which pending events spill. The oracle below is the whole-file mapping
//! as it was before events could spill: every event held, then sorted per run.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;

use super::dropped::{Ending, Tally};
use super::file::{refusal, Bound, FileMapping};
use super::mapping::{Mapper, Out, Pending};
use super::spans::{Attribute, Request, Span, SpanEvent, Value};
use super::tests::request;
use crate::input::Chunker;
use crate::TraceError;

/// What a mapping gives: its batches, its row count and whether `seq` came from clocks; or its
/// error.
type Mapped = Result<(Vec<RecordBatch>, u64, bool), String>;

/// The whole-file mapping, every event held.
struct Whole {
    mapper: Mapper,
    pending: Vec<(Pending, u64)>,
    spans: u64,
    tally: Tally,
}

impl Whole {
    fn map(requests: &[Request]) -> Mapped {
        let mut w = Whole {
            mapper: Mapper::new("t"),
            pending: Vec::new(),
            spans: 0,
            tally: Tally::default(),
        };
        for r in requests {
            w.request(r).map_err(|e| TraceError::Otlp(e).to_string())?;
        }
        w.finish().map_err(|e| e.to_string())
    }

    fn request(&mut self, request: &Request) -> Result<(), String> {
        for rs in &request.resource_spans {
            for span in &rs.spans {
                self.spans += 1;
                let outs = self
                    .mapper
                    .span(&rs.resource, span)
                    .map_err(|reason| refusal(self.spans, span, &reason))?;
                for d in self.mapper.take_dropped() {
                    self.tally.add(&d);
                }
                for out in outs {
                    match out {
                        Out::Event(p) => self.pending.push((*p, self.spans)),
                        Out::Merge { id, at } => {
                            if let Some((p, _)) = self.pending.get_mut(id as usize) {
                                p.at = at;
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn finish(self) -> Result<(Vec<RecordBatch>, u64, bool), TraceError> {
        if self.pending.is_empty() {
            return Err(TraceError::Empty);
        }
        let mut clocks = false;
        let mut batches = Vec::new();
        let ended = self
            .pending
            .iter()
            .filter(|(p, _)| p.event.kind == crate::Kind::RunEnd && p.unknown_kind.is_none())
            .map(|(p, _)| (p.event.run_id.clone(), p.event.scenario.clone()))
            .collect();
        let mut ending = Ending::new(self.tally, &ended);
        let mut runs: HashMap<String, Vec<(Pending, u64)>> = HashMap::new();
        let mut run_order = Vec::new();
        for p in self.pending {
            let run = &p.0.event.run_id;
            if !runs.contains_key(run) {
                run_order.push(run.clone());
            }
            runs.entry(run.clone()).or_default().push(p);
        }
        let mut chunker = Chunker::default();
        for run in run_order {
            let mut events = runs.remove(&run).unwrap_or_default();
            let incarnations: Vec<u32> = {
                let ranks = instance_ranks(&events);
                events
                    .iter()
                    .map(|(p, _)| match (p.incarnation, &p.instance) {
                        (Some(n), _) => n,
                        (None, Some(instance)) => ranks
                            .get(&(p.event.actor.as_str(), instance.as_str()))
                            .copied()
                            .unwrap_or(0),
                        (None, None) => 0,
                    })
                    .collect()
            };
            for ((p, _), n) in events.iter_mut().zip(incarnations) {
                p.event.incarnation = n;
            }
            let start = events.iter().map(|(p, _)| p.at).min().unwrap_or(0);
            let all_seq = events.iter().all(|(p, _)| p.seq.is_some());
            if all_seq {
                events.sort_by_key(|(p, _)| p.seq);
            } else {
                clocks = true;
                events.sort_by_key(|(p, span)| (p.at, *span, p.inside));
            }
            for (i, (mut p, _)) in events.into_iter().enumerate() {
                p.event.seq = if all_seq {
                    p.seq.unwrap_or(0)
                } else {
                    i as u64 + 1
                };
                p.event.ts_ns = i64::try_from(p.at - start).map_err(|_| {
                    TraceError::Otlp(format!(
                        "run `{run}` spans more than 292 years of span time"
                    ))
                })?;
                ending.pass(&mut p.event);
                batches.extend(chunker.push(p.event, p.unknown_kind)?);
            }
        }
        for e in ending.rest() {
            batches.extend(chunker.push(e, None)?);
        }
        batches.extend(chunker.flush()?);
        Ok((batches, chunker.rows(), clocks))
    }
}

fn instance_ranks(events: &[(Pending, u64)]) -> HashMap<(&str, &str), u32> {
    let mut first_seen: HashMap<(&str, &str), u64> = HashMap::new();
    for (p, _) in events {
        if let Some(i) = &p.instance {
            let at = first_seen
                .entry((p.event.actor.as_str(), i.as_str()))
                .or_insert(p.span_start);
            *at = (*at).min(p.span_start);
        }
    }
    let mut by_actor: HashMap<&str, Vec<(u64, &str)>> = HashMap::new();
    for (&(actor, instance), &at) in &first_seen {
        by_actor.entry(actor).or_default().push((at, instance));
    }
    let mut ranks = HashMap::new();
    for (actor, mut instances) in by_actor {
        instances.sort_unstable();
        for (rank, (_, instance)) in instances.into_iter().enumerate() {
            ranks.insert((actor, instance), u32::try_from(rank).unwrap_or(u32::MAX));
        }
    }
    ranks
}

/// The streaming mapping at `bound`, and how many segments it spilled.
fn streamed(requests: &[Request], bound: Bound) -> (Mapped, usize) {
    let mut file = FileMapping::within("t", bound);
    for r in requests {
        if let Err(e) = file.request(r) {
            return (
                Err(e.into_trace(TraceError::Otlp).to_string()),
                file.spilled(),
            );
        }
    }
    let spilled = file.spilled();
    let mapped = file.finish().map_err(|e| e.to_string()).and_then(|d| {
        let clocks = d.header.seq_from_clocks;
        let rows = d.rows;
        let batches = d
            .batches
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        Ok((batches, rows, clocks))
    });
    (mapped, spilled)
}

/// Spill at every `n` events.
fn every(n: usize) -> Bound {
    Bound {
        events: n,
        bytes: usize::MAX,
    }
}

/// Maps `requests` whole and streamed at several bounds; all must agree. The most segments any
/// bound spilled.
fn agree(what: &str, requests: &[Request]) -> usize {
    let whole = Whole::map(requests);
    let mut most = 0;
    for bound in [
        Bound::default(),
        every(1),
        every(2),
        every(3),
        every(7),
        every(64),
        Bound {
            events: usize::MAX,
            bytes: 4096,
        },
    ] {
        let (got, spilled) = streamed(requests, bound);
        most = most.max(spilled);
        match (&whole, &got) {
            (Ok(w), Ok(g)) => {
                assert_eq!(w.1, g.1, "{what} at {bound:?}: rows");
                assert_eq!(w.2, g.2, "{what} at {bound:?}: seq from clocks");
                assert_eq!(w.0.len(), g.0.len(), "{what} at {bound:?}: batches");
                for (i, (a, b)) in w.0.iter().zip(&g.0).enumerate() {
                    assert_eq!(a, b, "{what} at {bound:?}: batch {i}");
                }
            }
            (Err(w), Err(g)) => assert_eq!(w, g, "{what} at {bound:?}"),
            _ => panic!("{what} at {bound:?}: whole {whole:?}, streamed {got:?}"),
        }
    }
    most
}

/// Every OTLP file among the repository's fixtures.
fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut found = Vec::new();
    let mut dirs = vec![root.join("analyzer/tests"), root.join("recorder")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() && name != "target" {
                dirs.push(path);
            } else if name.contains(".otlp") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
fn every_otlp_fixture_maps_alike_whole_and_spilled() {
    let files = fixtures();
    assert!(files.len() >= 5, "OTLP fixtures: {files:?}");
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let requests: Vec<Request> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| super::json::decode(l.as_bytes()).unwrap())
            .collect();
        let spilled = agree(&path.display().to_string(), &requests);
        assert!(
            spilled >= 3,
            "{}: spilled {spilled} segments",
            path.display()
        );
    }
}

/// A span of `name` from `start` to `end` with attributes `attrs`.
fn span(name: &str, start: u64, end: u64, attrs: Vec<Attribute>) -> Span {
    Span {
        key: None,
        name: name.into(),
        start_unix_ns: Some(start),
        end_unix_ns: Some(end),
        error: false,
        attributes: attrs,
        events: Vec::new(),
    }
}

fn half(op: &str, message: &str, start: u64) -> Span {
    span(
        op,
        start,
        start + 5,
        vec![
            Attribute::string("messaging.operation.type", op),
            Attribute::string("messaging.message.id", message),
        ],
    )
}

fn kind(kind: &str, at: u64, seq: Option<i64>) -> Span {
    let mut attrs = vec![
        Attribute::string("outbox.kind", kind),
        Attribute::string("outbox.task_id", format!("t-{at}")),
        Attribute::string("outbox.event_id", format!("e-{at}")),
        Attribute::int("outbox.store_rev", at as i64),
    ];
    if let Some(seq) = seq {
        attrs.push(Attribute::int("outbox.seq", seq));
    }
    span(kind, at, at, attrs)
}

#[test]
fn a_merge_whose_first_half_was_spilled_moves_the_event_all_the_same() {
    // The receive comes first (at 100) and is spilled; its process half (at 50) comes after
    // others, and moves the delivery to 50: the run's first event.
    let mut requests = vec![request("worker", "w-1", vec![half("receive", "m-1", 100)])];
    for i in 0..6 {
        requests.push(request(
            "worker",
            "w-1",
            vec![kind("task_accepted", 60 + i * 10, None)],
        ));
    }
    requests.push(request("worker", "w-1", vec![half("process", "m-1", 50)]));
    let whole = Whole::map(&requests).unwrap();
    let (streamed_rows, spilled) = streamed(&requests, every(2));
    assert!(spilled >= 3, "spilled {spilled}");
    let mut unknown = std::collections::BTreeMap::new();
    let events: Vec<_> = streamed_rows
        .as_ref()
        .unwrap()
        .0
        .iter()
        .flat_map(|b| crate::batch_events(b, &mut unknown))
        .collect();
    assert_eq!(events.len(), 7);
    assert_eq!(
        (events[0].kind.as_str(), events[0].seq, events[0].ts_ns),
        ("delivered", 1, 0)
    );
    assert_eq!(events[1].ts_ns, 10);
    assert_eq!(whole.0, streamed_rows.unwrap().0);
    assert!(agree("late merge", &requests) >= 3);
}

#[test]
fn a_run_that_loses_outbox_seq_after_a_spill_is_ordered_by_time() {
    // The first events carry `outbox.seq` in the reverse of their times; the last does not: the
    // whole run is then in time order, the spilled segments sorted again.
    let mut spans: Vec<Span> = (0..8)
        .map(|i| kind("task_accepted", 1000 - i * 10, Some(i as i64 + 1)))
        .collect();
    spans.push(kind("task_accepted", 5, None));
    let requests = vec![request("api", "a", spans)];
    assert!(agree("seq lost", &requests) >= 3);
    let (mapped, _) = streamed(&requests, every(2));
    assert!(mapped.unwrap().2, "seq from clocks");
}

#[test]
fn a_run_longer_than_ts_ns_holds_is_the_same_error() {
    let spans = vec![
        kind("task_accepted", 1, None),
        kind("task_accepted", 2, None),
        kind("task_accepted", u64::MAX - 1, None),
    ];
    let requests = vec![request("api", "a", spans)];
    agree("too long", &requests);
    let (mapped, _) = streamed(&requests, every(1));
    assert!(mapped.unwrap_err().contains("292 years"));
    // A merge that brings the latest event back in range: no error, whole or spilled.
    let requests = vec![
        request("w", "w", vec![half("receive", "m", u64::MAX - 10)]),
        request("w", "w", vec![kind("task_accepted", 1, None)]),
        request("w", "w", vec![half("process", "m", 3)]),
    ];
    agree("brought back", &requests);
    assert!(streamed(&requests, every(1)).0.is_ok());
}

#[test]
fn a_bad_span_after_a_spill_is_the_same_error() {
    let mut spans: Vec<Span> = (0..5)
        .map(|i| kind("task_accepted", 10 + i, None))
        .collect();
    spans.push(span(
        "bad",
        1,
        2,
        vec![
            Attribute::string("outbox.kind", "observed"),
            Attribute::string("outbox.counter", "many"),
        ],
    ));
    let requests = vec![request("api", "a", spans)];
    agree("bad span", &requests);
    assert!(streamed(&requests, every(1))
        .0
        .unwrap_err()
        .contains("span 6 `bad`"));
}

/// A small deterministic generator (xorshift).
struct Draw(u64);

impl Draw {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Several runs interleaved, actors with several instances, some runs with `outbox.seq`
/// throughout and some without, receive/process halves far apart in either order, span events,
/// kinds the contract does not define, ties in time.
fn generated(seed: u64, spans: usize) -> Vec<Request> {
    let mut d = Draw(seed);
    let mut requests = Vec::new();
    let mut open: Vec<(String, String, String, u64)> = Vec::new();
    let kinds = [
        "task_submitted",
        "outbox_written",
        "effect_committed",
        "made_up_kind",
    ];
    for n in 0..spans {
        let run = d.below(3);
        let actor = ["api", "relay", "worker"][d.below(3) as usize];
        let instance = format!("{actor}-{}", d.below(3));
        let t = 1_000 + d.below(500) * 10;
        let mut attrs = vec![Attribute::string("outbox.run_id", format!("run-{run}"))];
        let s = match d.below(6) {
            0 | 1 if !open.is_empty() && d.below(2) == 0 => {
                let (op, message, inst, at) = open.swap_remove(d.below(open.len() as u64) as usize);
                let other = if op == "receive" {
                    "process"
                } else {
                    "receive"
                };
                attrs.truncate(0);
                attrs.push(Attribute::string("outbox.run_id", format!("run-{run}")));
                let mut s = half(other, &message, at.saturating_sub(d.below(40)));
                s.attributes.extend(attrs);
                requests.push(request("worker", &inst, vec![s]));
                continue;
            }
            0 | 1 => {
                let op = if d.below(2) == 0 {
                    "receive"
                } else {
                    "process"
                };
                let message = format!("m-{n}");
                let inst = format!("worker-{}", d.below(2));
                // Only run 0 pairs its halves (the delivery key has the run in it).
                let mut s = half(op, &message, t);
                s.attributes
                    .push(Attribute::string("outbox.run_id", "run-0"));
                if d.below(4) > 0 {
                    open.push((op.to_string(), message, inst.clone(), t));
                }
                requests.push(request("worker", &inst, vec![s]));
                continue;
            }
            2 => {
                attrs.push(Attribute::string("messaging.operation.type", "send"));
                attrs.push(Attribute::string("messaging.message.id", format!("m-{n}")));
                span("send", t, t + d.below(20), attrs)
            }
            _ => {
                let k = kinds[d.below(kinds.len() as u64) as usize];
                attrs.push(Attribute::string("outbox.kind", k));
                // Complete for every kind used, but on some spans: those are refused.
                if d.below(8) > 0 {
                    for (key, v) in [("outbox.event_id", n), ("outbox.task_id", n)] {
                        attrs.push(Attribute::string(key, format!("x-{v}")));
                    }
                    for key in ["outbox.store_rev", "outbox.amount", "outbox.counter"] {
                        attrs.push(Attribute::int(key, n as i64));
                    }
                }
                // Run 1 has `outbox.seq` on every event; run 2 on some.
                if run == 1 || (run == 2 && d.below(3) > 0) {
                    attrs.push(Attribute::int("outbox.seq", (n as i64) * 7 % 1001));
                }
                let mut s = span(k, t, t + d.below(3), attrs);
                if d.below(4) == 0 {
                    s.events.push(SpanEvent {
                        name: "inner".into(),
                        time_unix_ns: Some(t + 1),
                        attributes: vec![Attribute {
                            key: "outbox.kind".into(),
                            value: Value::String("outbox_marked".into()),
                        }],
                    });
                }
                s
            }
        };
        requests.push(request(actor, &instance, vec![s]));
    }
    requests
}

#[test]
fn generated_runs_map_alike_whole_and_spilled() {
    for seed in [1, 7, 42, 1234, 99991] {
        let requests = generated(seed, 400);
        let spilled = agree(&format!("seed {seed}"), &requests);
        assert!(spilled > 50, "seed {seed}: spilled {spilled}");
    }
}
