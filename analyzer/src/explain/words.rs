//! Words for the data: a reason, a note, what the trace lacks, and the witness rows with their
//! relevant fields ([`super::findings`] explains violations). Renderers (text and JSON) share
//! these.

use outbox_trace::{detail_key, Kind};

use crate::check::{Held, Reason, Total};
use crate::model::history::History;
use crate::model::intern::Interner;
use crate::model::load::FileNote;
use crate::model::row::Row;

/// A field value of a witness row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A string column.
    Text(String),
    /// A signed integer column.
    Int(i64),
    /// An unsigned integer column.
    UInt(u64),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Text(s) => f.write_str(s),
            Value::Int(i) => write!(f, "{i}"),
            Value::UInt(u) => write!(f, "{u}"),
        }
    }
}

/// A broker position as its producer wrote it: a Redis Stream entry id as `<ms>-<n>` text,
/// any other position as the number.
fn broker_position(b: u64) -> Value {
    let position = outbox_trace::BrokerPosition(b);
    match position.as_redis_entry() {
        Some(_) => Value::Text(position.to_string()),
        None => Value::UInt(b),
    }
}

/// One row of a witness chain, ready to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessRow {
    /// Where the row sits in the run: witness lines are read in this order.
    pub seq: u64,
    /// Who recorded it, by name (the id resolved).
    pub actor: String,
    /// Which life of the actor: a crash starts the next.
    pub incarnation: u32,
    /// What happened.
    pub kind: Kind,
    /// The non-null optional columns, in contract order.
    pub fields: Vec<(&'static str, Value)>,
}

/// A row as a witness row.
pub fn witness_row(row: &Row, h: &History, names: &Interner) -> WitnessRow {
    let mut fields = Vec::new();
    let text = |id| Value::Text(names.name(id).to_string());
    if let Some(t) = row.task {
        fields.push(("task_id", text(t)));
    }
    if let Some(e) = row.event {
        fields.push(("event_id", text(e)));
    }
    if let Some(a) = row.aggregate {
        fields.push(("aggregate_id", text(a)));
    }
    let numbers = [
        ("aggregate_seq", row.aggregate_seq().map(Value::UInt)),
        ("attempt", row.attempt().map(|a| Value::UInt(a.into()))),
        ("broker_seq", row.broker_seq().map(broker_position)),
        ("partition", row.partition().map(|p| Value::Int(p.into()))),
        ("store_rev", row.store_rev().map(Value::Int)),
        ("amount", row.amount().map(Value::Int)),
        ("counter", row.counter().map(Value::Int)),
    ];
    fields.extend(numbers.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))));
    if let Some(k) = row.counter_key {
        fields.push(("counter_key", text(k)));
    }
    if let Some(source) = row.source.as_str() {
        fields.push(("source", Value::Text(source.to_string())));
    }
    if let Some(d) = h.detail_text(row) {
        fields.push(("detail", Value::Text(d.to_string())));
    }
    WitnessRow {
        seq: row.seq,
        actor: names.name(row.actor).to_string(),
        incarnation: row.incarnation,
        kind: row.kind,
        fields,
    }
}

/// Why spans were refused: the columns they lacked, else the producer's reasons.
fn refusal(missing: &[String], reasons: &[String]) -> String {
    if missing.is_empty() && !reasons.is_empty() {
        format!("({})", reasons.join("; "))
    } else {
        format!("for want of {}", missing.join(", "))
    }
}

/// Why a scenario cut short decides nothing against the store.
fn cut_short(no_run_end: bool) -> String {
    let why = if no_run_end {
        "the scenario has no run_end row"
    } else {
        "the scenario was interrupted"
    };
    format!("{why}: the store was read while the scenario may still have been running")
}

/// Why the effects the store holds beyond the trace are the scenario's own fault's doing (the
/// words `analyzer sql` writes too).
fn replies_lost(lost: &crate::check::RepliesLost, short: &crate::check::Shortfall) -> String {
    let replies = lost.replies.map_or_else(
        || "replies (not counted)".to_string(),
        |n| format!("{n} reply(ies)"),
    );
    format!(
        "the store holds {} effects, the trace {}: the {} fault dropped {replies}, whose \
         commits the trace may not show",
        short.store,
        short.trace,
        lost.fault.as_str(),
    )
}

/// The reason as a short phrase.
pub fn reason(r: &Reason) -> String {
    match r {
        Reason::NoRows(kinds) => {
            let names: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
            format!("the trace records no {} rows", names.join(" or "))
        }
        Reason::StoreHoldsMore(s) => {
            let (store, trace) = held_words(s.held);
            format!(
                "the store holds {} {store}, the trace {} {trace}: {LOST}",
                s.store, s.trace
            )
        }
        Reason::CutShort { no_run_end } => cut_short(*no_run_end),
        Reason::RepliesLost { lost, short } => replies_lost(lost, short),
        Reason::TraceShort {
            total,
            store,
            trace,
            actor,
            incarnation,
            others,
        } => trace_short(total, (*store, *trace), (actor, *incarnation), *others),
        Reason::Refused {
            kind,
            spans,
            missing,
            reasons,
        } => format!(
            "{spans} {} span(s) were refused {} (run_end.detail.refused): \
             the rows they would have given could change this",
            kind.map_or("kind-less", Kind::as_str),
            refusal(missing, reasons)
        ),
        Reason::Unmapped {
            kinds,
            spans,
            names,
        } => {
            let kinds: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
            let names = if names.is_empty() {
                String::new()
            } else {
                format!(" ({})", names.join(", "))
            };
            format!(
                "the trace records no {} rows and {spans} span(s){names} mapped to no kind \
                 (run_end.detail.unmapped): they may have been such rows",
                kinds.join(" or ")
            )
        }
        Reason::TwoCopies { acks } => format!(
            "{acks} ACK(s) without a position came while their actor life held two copies of \
             the event: which delivery each answers cannot be told"
        ),
        Reason::NoAggregateInfo => "no aggregate information".into(),
        Reason::NoExternalCalls => "no external calls recorded".into(),
        Reason::OneSource => "one source".into(),
        Reason::NoSpanAccounts => {
            "the service reported none of the steps read from the wire: nothing to compare".into()
        }
        Reason::FaultHitLives { disagreements } => {
            format!("{disagreements} disagreement(s) on lives a fault hit: not judged")
        }
        Reason::NoRunEnd => format!("no {} row", Kind::RunEnd),
        Reason::NotRecovered => format!(
            "{}.{} is false",
            Kind::RunEnd,
            detail_key!(RunEnd.recovered)
        ),
        Reason::RecoveredMissing => format!(
            "{} has no boolean detail.{}",
            Kind::RunEnd,
            detail_key!(RunEnd.recovered)
        ),
        Reason::NoObserved => format!("no {} row", Kind::Observed),
        Reason::NoObservedCounter => format!("no {} row with a counter", Kind::Observed),
        Reason::NoObservedTotals => {
            let keys: Vec<String> = Total::ALL.iter().map(|t| t.key()).collect();
            format!("the {} row has none of {}", Kind::Observed, keys.join(", "))
        }
        Reason::MissingFields { kind, column, rows } => {
            format!("{rows} {kind} row(s) lack {column} and could not be used")
        }
        Reason::NoStoreRev => {
            "no store_rev on the rows it needs: the source does not report store transactions"
                .into()
        }
        Reason::MayHaveLostSpans { actor, incarnation } => format!(
            "{actor}#{incarnation} ends without a {crash} row before a later life of {actor}: \
             spans it never exported could remove the violation",
            crash = Kind::Crash
        ),
    }
}

/// The words of [`Reason::TraceShort`]: the observer's total against the trace's, and the life
/// (with `others` more) that may not have exported its last spans.
fn trace_short(
    total: &Total,
    (store, trace): (i64, i64),
    (actor, incarnation): (&str, u32),
    others: usize,
) -> String {
    let more = match others {
        0 => String::new(),
        1 => " (and 1 more life)".into(),
        n => format!(" (and {n} more lives)"),
    };
    format!(
        "the observer read {} = {store}, the trace counts {trace}: {actor}#{incarnation}{more} \
         may not have exported its last spans, which would explain it",
        total.key()
    )
}

/// What rows missing from a trace mean, for the reasons and explanations that find them.
pub const LOST: &str =
    "the trace lacks rows (a step never reported, or a span never exported); see what to turn off";

/// The store's total and the trace's count, in words, of a lost-rows comparison.
pub fn held_words(held: Held) -> (&'static str, &'static str) {
    match held {
        Held::TasksDone => ("completed tasks", "tasks with an effect"),
        Held::Results => ("results", "effects"),
        Held::DedupKeys => ("dedup keys", "effects"),
        Held::OutboxRows => ("outbox rows", "intents"),
    }
}

/// A file note as one line.
pub fn file_note(n: &FileNote) -> String {
    match n {
        FileNote::NoSchemaVersion => "no outbox_trace.schema_version key; read as version 1".into(),
        FileNote::ExtraColumns(cols) => format!("extra column(s) ignored: {}", cols.join(", ")),
        FileNote::UnknownKind { kind, rows } => {
            format!("unknown kind `{kind}` ignored ({rows} row(s))")
        }
    }
}

/// Notes about one history: rows lacking required fields, several backends.
pub fn scenario_notes(h: &History, names: &Interner) -> Vec<String> {
    let mut notes: Vec<String> = h
        .missing
        .iter()
        .map(|((kind, column), rows)| {
            format!("{rows} {kind} row(s) lack required {column}; checks that need it skip them")
        })
        .collect();
    if h.seq_from_clocks {
        notes.push(
            "seq comes from span times on separate clocks (no outbox.seq): an order between \
             rows of different processes rests on those clocks; checks on one actor's own order \
             and on the stores' numbers do not"
                .into(),
        );
    }
    if !h.other_backends.is_empty() {
        let others: Vec<&str> = h.other_backends.iter().map(|b| names.name(*b)).collect();
        notes.push(format!(
            "rows name other backends too: {}",
            others.join(", ")
        ));
    }
    notes
}

/// Where the book says which spans to emit, with which attributes.
pub const SPANS_TABLE: &str = "docs/src/own-service.md, \"Which spans to emit\"";

/// What the trace lacks, for the unknown verdicts that lack columns or kinds: one line each,
/// naming the attribute that adds it (empty when nothing is lacking).
pub fn what_to_add(outcomes: &[&crate::check::Outcome]) -> Vec<String> {
    let attrs = |kind: Kind| -> String {
        kind.required_fields()
            .iter()
            .map(|f| format!("`outbox.{}`", f.column()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut lines = std::collections::BTreeSet::new();
    for o in outcomes {
        if o.verdict != crate::check::Verdict::Unknown {
            continue;
        }
        match &o.reason {
            Some(Reason::Refused { kind, missing, .. }) if !missing.is_empty() => {
                let add: Vec<String> = missing.iter().map(|c| format!("`outbox.{c}`")).collect();
                let whose = kind.map_or_else(
                    || "spans with `outbox.*` attributes".to_string(),
                    |k| format!("{k}: its spans"),
                );
                lines.insert(format!(
                    "{whose} lack {}; add {} to them",
                    missing.join(", "),
                    add.join(", ")
                ));
            }
            Some(Reason::NoRows(kinds) | Reason::Unmapped { kinds, .. }) => {
                // The first kind of a group is the one to add; external calls are optional.
                for &kind in kinds
                    .iter()
                    .take(1)
                    .filter(|&&k| k != Kind::ExternalApplied)
                {
                    let cols = attrs(kind);
                    let with = if cols.is_empty() {
                        String::new()
                    } else {
                        format!(" and {cols}")
                    };
                    lines.insert(format!(
                        "{kind}: no rows; give the span (or span event) of that step \
                         `outbox.kind = {kind}`{with}, or declare it in `records` if the \
                         service never has such a step"
                    ));
                }
            }
            _ => {}
        }
    }
    lines.into_iter().collect()
}
