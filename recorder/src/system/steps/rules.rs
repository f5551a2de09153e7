//! The `[steps]` table checked: its rules, each with the kind it writes, the service it reads,
//! what it waits for there and where each column comes from.

use std::collections::BTreeMap;
use std::str::FromStr;

use outbox_trace::Kind;

use super::spec::{RuleSpec, StepsSpec};
use super::sql::{rule_target, shape, Target};
use super::value::{Ref, Side};
use crate::fault::protocols::Wire;
use crate::system::file::ServiceSpec;
use crate::wire::heard::Heard;

/// The columns a rule may map.
const MAPPED: [&str; 7] = [
    "event_id",
    "task_id",
    "aggregate_id",
    "aggregate_seq",
    "amount",
    "counter",
    "counter_key",
];

/// The column a commit rule may map instead of the wire's order of answered commits.
pub(super) const STORE_REV: &str = "store_rev";

/// The kinds each wire's traffic can show, as a rule names them.
const BY_WIRE: [(Wire, &[Kind]); 2] = [
    (
        Wire::Postgres,
        &[
            Kind::TaskAccepted,
            Kind::IntentRecorded,
            Kind::OutboxMarked,
            Kind::EffectCommitted,
            Kind::DuplicateSuppressed,
        ],
    ),
    (
        Wire::Nats,
        &[
            Kind::PublishAttempt,
            Kind::PublishAcked,
            Kind::Delivered,
            Kind::Acked,
        ],
    ),
];

/// What a rule waits for on its service's traffic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum On {
    /// A committed transaction holding a statement on `target` that changed or returned `rows`
    /// rows (`None`: at least one).
    Commit {
        /// The statement.
        target: Target,
        /// How many rows it must have changed or returned.
        rows: Option<u64>,
    },
    /// A NATS message on this subject (the kind says which: a publish, its ACK, a delivery, its
    /// ACK).
    Subject(String),
}

/// One rule, checked.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The step it writes (`delivered` also writes `redelivered`).
    pub kind: Kind,
    /// The service whose traffic it reads.
    pub service: String,
    /// What it waits for.
    pub on: On,
    /// Each mapped column and where it comes from.
    pub columns: Vec<(String, Ref)>,
}

/// A system file's `[steps]`, checked: its rules in the file's order.
#[derive(Debug, Clone, Default)]
pub struct Steps {
    rules: Vec<Rule>,
}

impl Steps {
    /// Checks `spec` against the file's services: every kind one a wire shows, every service
    /// one whose protocol the proxy reads, every reference one that can match. The error is
    /// one line.
    pub fn check(
        spec: &StepsSpec,
        services: &BTreeMap<String, ServiceSpec>,
    ) -> Result<Steps, String> {
        let mut rules = Vec::new();
        for (kind, specs) in spec {
            for rule in specs.all() {
                rules.push(
                    check_rule(kind, rule, services).map_err(|e| format!("[steps.{kind}]: {e}"))?,
                );
            }
        }
        check_store_rev(&rules)?;
        Ok(Steps { rules })
    }

    /// Whether the file maps any step.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rules.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The kinds read from the wire, in the contract's order (`delivered` with `redelivered`).
    pub fn kinds(&self) -> Vec<Kind> {
        let mut kinds: Vec<Kind> = Kind::ALL
            .iter()
            .copied()
            .filter(|k| self.rules.iter().any(|r| r.kind == *k))
            .collect();
        if kinds.contains(&Kind::Delivered) {
            let at = kinds
                .iter()
                .position(|k| *k == Kind::Delivered)
                .unwrap_or(0);
            kinds.insert(at + 1, Kind::Redelivered);
        }
        kinds
    }

    /// Whether steps of `kind` are read from the wire.
    pub fn reads(&self, kind: Kind) -> bool {
        let kind = if kind == Kind::Redelivered {
            Kind::Delivered
        } else {
            kind
        };
        self.rules.iter().any(|r| r.kind == kind)
    }

    /// Whether any rule reads the traffic of `service`.
    pub fn listens_to(&self, service: &str) -> bool {
        self.rules.iter().any(|r| r.service == service)
    }

    /// Whether `heard` on `service` is any rule's concern: a transaction with a statement on a
    /// rule's table, a message on a rule's subject, traffic passing unread. A listening proxy
    /// tells only these, so a service's other traffic (an idle poll) costs no round trip and
    /// counts as no activity.
    pub fn concerns(&self, service: &str, heard: &Heard) -> bool {
        let mut rules = self.rules.iter().filter(|r| r.service == service);
        let subject = match heard {
            Heard::Committed(statements) => {
                let targets: Vec<Target> = statements
                    .iter()
                    .filter_map(|s| shape(&s.sql).target)
                    .collect();
                return rules.any(
                    |r| matches!(&r.on, On::Commit { target, .. } if targets.contains(target)),
                );
            }
            Heard::Published(m) | Heard::PubAcked { publish: m, .. } => &m.subject,
            Heard::Delivered(d) | Heard::Acked(d) => &d.message.subject,
            Heard::Unread { .. } => return true,
        };
        rules.any(|r| matches!(&r.on, On::Subject(s) if s == subject))
    }
}

/// One rule of kind `kind`, checked.
fn check_rule(
    kind: &str,
    spec: &RuleSpec,
    services: &BTreeMap<String, ServiceSpec>,
) -> Result<Rule, String> {
    let parsed = Kind::from_str(kind).map_err(|_| format!("`{kind}` is no step kind"))?;
    let service = services
        .get(&spec.on)
        .ok_or_else(|| format!("on = \"{}\": no such service in [services]", spec.on))?;
    let (wire, kinds) = BY_WIRE
        .iter()
        .find(|(w, _)| *w == service.wire)
        .ok_or_else(|| {
            format!(
                "on = \"{}\": its wire is {}; steps are read from wire = \"postgres\" or \"nats\"",
                spec.on,
                service.wire.as_str()
            )
        })?;
    if !kinds.contains(&parsed) {
        let names: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
        let also = if parsed == Kind::Redelivered {
            " (`delivered` covers redeliveries)"
        } else {
            ""
        };
        return Err(format!(
            "a {} service shows {}, not {kind}{also}",
            wire.as_str(),
            names.join(", ")
        ));
    }
    let on = check_on(*wire, spec)?;
    let columns = check_columns(parsed, *wire, spec)?;
    Ok(Rule {
        kind: parsed,
        service: spec.on.clone(),
        on,
        columns,
    })
}

/// `store_rev` is one order for every commit: a column that every commit rule maps, or the
/// order the proxies saw the commits answered (none maps it).
fn check_store_rev(rules: &[Rule]) -> Result<(), String> {
    let commits = rules.iter().filter(|r| matches!(r.on, On::Commit { .. }));
    let (mapped, unmapped): (Vec<&Rule>, Vec<&Rule>) =
        commits.partition(|r| r.columns.iter().any(|(c, _)| c == STORE_REV));
    match (mapped.first(), unmapped.first()) {
        (Some(with), Some(without)) => Err(format!(
            "[steps.{}] maps store_rev and [steps.{}] does not: map it on every commit rule, or \
             on none (then the wire's order of answered commits gives it)",
            with.kind.as_str(),
            without.kind.as_str()
        )),
        _ => Ok(()),
    }
}

/// What the rule waits for: `commit` on PostgreSQL, `subject` on NATS.
fn check_on(wire: Wire, spec: &RuleSpec) -> Result<On, String> {
    match wire {
        Wire::Postgres => {
            if spec.subject.is_some() {
                return Err(
                    "`subject` is for a nats service; a postgres rule names `commit`".into(),
                );
            }
            let text = spec
                .commit
                .as_deref()
                .ok_or("a postgres rule names its statement: commit = \"insert into TABLE\"")?;
            let target = rule_target(text).ok_or_else(|| {
                format!(
                    "commit = \"{text}\": expected insert into TABLE, update TABLE, delete from TABLE or select from TABLE"
                )
            })?;
            Ok(On::Commit {
                target,
                rows: spec.rows,
            })
        }
        _ => {
            if spec.commit.is_some() || spec.rows.is_some() {
                return Err(
                    "`commit` and `rows` are for a postgres service; a nats rule names `subject`"
                        .into(),
                );
            }
            let subject = spec
                .subject
                .as_deref()
                .filter(|s| !s.trim().is_empty() && !s.contains(char::is_whitespace))
                .ok_or("a nats rule names its messages' subject: subject = \"orders\"")?;
            Ok(On::Subject(subject.to_string()))
        }
    }
}

/// The mapped columns: known names, references of the service's protocol, the kind's ids there.
fn check_columns(kind: Kind, wire: Wire, spec: &RuleSpec) -> Result<Vec<(String, Ref)>, String> {
    let side = if wire == Wire::Postgres {
        Side::Sql
    } else {
        Side::Message
    };
    let mut columns = Vec::new();
    for (column, text) in &spec.columns {
        if column == STORE_REV && wire != Wire::Postgres {
            return Err(
                "`store_rev` is a commit's: a postgres rule may map it, a nats rule cannot".into(),
            );
        }
        if !MAPPED.contains(&column.as_str()) && column != STORE_REV {
            return Err(format!(
                "`{column}` is no column a rule maps (it maps {}, and store_rev on a postgres \
                 rule; attempt and broker_seq come from the wire)",
                MAPPED.join(", ")
            ));
        }
        let reference = Ref::parse(text).map_err(|e| format!("{column} = {e}"))?;
        if reference.side() != side {
            return Err(format!(
                "{column} = \"{text}\": a {} rule reads {}",
                wire.as_str(),
                match side {
                    Side::Sql => "TABLE.COLUMN or TABLE.$N",
                    Side::Message => "payload:/POINTER or header:NAME",
                }
            ));
        }
        columns.push((column.clone(), reference));
    }
    for field in kind.identifying_fields() {
        if !columns.iter().any(|(c, _)| c == field.column()) {
            return Err(format!(
                "a {} step needs `{}`: map it",
                kind.as_str(),
                field.column()
            ));
        }
    }
    Ok(columns)
}
