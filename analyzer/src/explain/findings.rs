//! A violation in plain words: one explanation per finding, naming the rows of its witness by
//! their `seq`, actor lives as `actor#incarnation`, and the events, tasks, counters and store
//! transactions involved.

use outbox_trace::Kind;

use super::words::LOST;
use crate::check::{Finding, Total, Violation};
use crate::model::history::History;
use crate::model::intern::{Id, Interner};

/// A plain explanation of a violation.
pub fn violation(v: &Violation, h: &History, names: &Interner) -> String {
    let w = Words {
        h,
        names,
        event: names.name_opt(v.event).unwrap_or("?"),
        task: names.name_opt(v.task).unwrap_or("?"),
    };
    match &v.finding {
        Finding::MultipleEffects {
            by_task: false,
            commits,
        } => w.event_committed_again(commits),
        Finding::MultipleEffects {
            by_task: true,
            commits,
        } => w.task_committed_again(commits),
        Finding::IntentMissing { accepted } => w.intent_missing(*accepted),
        Finding::IntentOtherRev { accepted, intent } => w.intent_other_rev(*accepted, *intent),
        Finding::MarkBeforePuback { mark, later_puback } => {
            w.mark_before_puback(*mark, *later_puback)
        }
        Finding::AckBeforeCommit {
            delivery,
            ack,
            later_settle,
            crash,
        } => w.ack_before_commit(*delivery, *ack, *later_settle, *crash),
        Finding::AggregateOutOfOrder {
            aggregate,
            earlier,
            earlier_seq,
            later,
            later_seq,
        } => w.aggregate_out_of_order(*aggregate, (*earlier, *earlier_seq), (*later, *later_seq)),
        Finding::CounterStep {
            key,
            commit,
            prev,
            expected,
            found,
        } => w.counter_step(*key, *commit, *prev, *expected, *found),
        Finding::CounterFinal {
            key,
            observed_row,
            observed,
            expected,
        } => w.counter_final(*key, *observed_row, *observed, *expected),
        Finding::ObservedMismatch {
            observed_row,
            total,
            observed,
            trace,
            at_least,
        } => w.observed_mismatch(*observed_row, *total, (*observed, *trace), *at_least),
        Finding::ExternalTwice { applied } => w.external_twice(applied),
        Finding::SourcesDisagree {
            kind,
            actor,
            incarnation,
            wire,
            span,
            wire_rows,
            span_rows,
        } => w.sources_disagree(
            (*kind, *actor, *incarnation),
            (*wire, wire_rows),
            (*span, span_rows),
        ),
        Finding::LostTask { accepted } => w.lost_task(*accepted),
    }
}

/// Names and positions used in explanations, with the violation's event and task named.
struct Words<'a> {
    h: &'a History,
    names: &'a Interner,
    /// The violation's event (`?` when it names none).
    event: &'a str,
    /// The violation's task (`?` when it names none).
    task: &'a str,
}

/// The names and positions of rows.
impl Words<'_> {
    fn seq(&self, at: usize) -> u64 {
        self.h.row(at).seq
    }

    fn who(&self, at: usize) -> String {
        let r = self.h.row(at);
        format!("{}#{}", self.names.name(r.actor), r.incarnation)
    }

    /// The event of the row at `at` (`?` when it has none).
    fn event_of(&self, at: usize) -> &str {
        self.names.name_opt(self.h.row(at).event).unwrap_or("?")
    }

    fn seqs(&self, rows: &[usize]) -> String {
        rows.iter()
            .map(|&at| self.seq(at).to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The store transaction of the row at `at` (`?` when it has none).
    fn rev(&self, at: usize) -> String {
        self.h
            .row(at)
            .store_rev()
            .map_or_else(|| "?".into(), |r| r.to_string())
    }
}

/// One explanation per finding.
impl Words<'_> {
    /// `single-effect`: the event's effect committed more than once.
    fn event_committed_again(&self, commits: &[usize]) -> String {
        format!(
            "{} was committed {} times (seq {}): the effect happened more than once",
            self.event,
            commits.len(),
            self.seqs(commits)
        )
    }

    /// `single-effect` by task: the task committed under several events.
    fn task_committed_again(&self, commits: &[usize]) -> String {
        let events: Vec<String> = commits
            .iter()
            .map(|&at| format!("{} at seq {}", self.event_of(at), self.seq(at)))
            .collect();
        format!(
            "task {} was committed {} times under different events ({}): the task took effect more than once",
            self.task,
            commits.len(),
            events.join(", ")
        )
    }

    /// `intent-atomic`: an accepted task without the intent of its event.
    fn intent_missing(&self, accepted: usize) -> String {
        format!(
            "task {} was accepted at seq {} but no {} of {} exists: the event can never be published",
            self.task,
            self.seq(accepted),
            Kind::IntentRecorded,
            self.event
        )
    }

    /// `intent-atomic`: the task and its intent committed in different store transactions.
    fn intent_other_rev(&self, accepted: usize, intent: usize) -> String {
        format!(
            "task {} was committed in store transaction {} (seq {}) but the intent of {} in transaction {} (seq {}): a crash between the two commits leaves a task without its event",
            self.task,
            self.rev(accepted),
            self.seq(accepted),
            self.event,
            self.rev(intent),
            self.seq(intent)
        )
    }

    /// `mark-after-puback`: the outbox record marked before any publish ACK.
    fn mark_before_puback(&self, mark: usize, later_puback: Option<usize>) -> String {
        let after = match later_puback {
            Some(p) => format!("the first publish ACK came later, at seq {}", self.seq(p)),
            None => "no publish ACK of it was ever recorded".into(),
        };
        format!(
            "{} marked {} published at seq {} before any publish ACK; {after}; a crash or lost publish in between would lose the event",
            self.who(mark),
            self.event,
            self.seq(mark)
        )
    }

    /// `ack-after-commit`: a delivery ACKed with no commit between it and the ACK; what came
    /// after, and what a crash does.
    fn ack_before_commit(
        &self,
        delivery: Option<usize>,
        ack: usize,
        later_settle: Option<usize>,
        crash: Option<usize>,
    ) -> String {
        let event = self.event;
        let acked = match delivery {
            Some(d) => match self.h.row(d).attempt() {
                Some(n) => format!("delivery {n} of {event} (seq {})", self.seq(d)),
                None => format!("the delivery of {event} (seq {})", self.seq(d)),
            },
            None => format!("{event} (no delivery of it to this incarnation)"),
        };
        let commit = match later_settle {
            Some(s) => format!(
                "its {} came at seq {}",
                commit_word(self.h.row(s).kind),
                self.seq(s)
            ),
            None => "no commit or suppression of it followed".into(),
        };
        let risk = match crash {
            Some(c) if later_settle.is_none_or(|s| c < s) => format!(
                "{} crashed at seq {} before committing, and the ACKed delivery will not come back",
                self.who(c),
                self.seq(c)
            ),
            _ => "a crash between the two would lose the task".into(),
        };
        format!(
            "{} ACKed {acked} at seq {} with no commit in between; {commit}; {risk}",
            self.who(ack),
            self.seq(ack)
        )
    }

    /// `aggregate-order`: a publication overtook one of a lower `aggregate_seq`; each
    /// publication as (row, `aggregate_seq`).
    fn aggregate_out_of_order(
        &self,
        aggregate: Id,
        (earlier, earlier_seq): (usize, u64),
        (later, later_seq): (usize, u64),
    ) -> String {
        format!(
            "in aggregate {}, {} (aggregate_seq {later_seq}) was first published at seq {}, after {} (aggregate_seq {earlier_seq}) at seq {}: consumers see the aggregate out of order",
            self.names.name(aggregate),
            self.event_of(later),
            self.seq(later),
            self.event_of(earlier),
            self.seq(earlier)
        )
    }

    /// `counter-exact`: a commit's counter is not the previous one plus its amount.
    fn counter_step(
        &self,
        key: Option<Id>,
        commit: usize,
        prev: Option<usize>,
        expected: i64,
        found: i64,
    ) -> String {
        let counter = counter_name(key, self.names);
        let before = match prev {
            Some(p) => format!("the previous commit (seq {}) left", self.seq(p)),
            None => "the run started at".into(),
        };
        let amount = self.h.row(commit).amount().unwrap_or(0);
        format!(
            "the commit of {} at seq {} (store_rev {}) set {counter} to {found}; {before} {}, plus amount {amount} is {expected}",
            self.event,
            self.seq(commit),
            self.rev(commit),
            expected - amount
        )
    }

    /// `counter-exact`: the observed counter is not the start plus the committed amounts.
    fn counter_final(
        &self,
        key: Option<Id>,
        observed_row: usize,
        observed: i64,
        expected: i64,
    ) -> String {
        let read = match key {
            Some(k) => format!("counter {} = {observed}", self.names.name(k)),
            None => format!("counter {observed}"),
        };
        format!(
            "the observer read {read} at seq {}, but the start plus the committed amounts is {expected}",
            self.seq(observed_row)
        )
    }

    /// `observed-agrees`: a total the observer read disagrees with the trace's count, given as
    /// (observed, trace).
    fn observed_mismatch(
        &self,
        observed_row: usize,
        total: Total,
        (observed, trace): (i64, i64),
        at_least: bool,
    ) -> String {
        let key = total.key();
        let what = match total {
            Total::StreamMessages => format!("{trace} distinct event(s) have a publish ACK"),
            Total::Tasks => format!("the trace accepted {trace} distinct task(s)"),
            Total::Intents => format!("the trace recorded {trace} distinct intent(s)"),
            Total::Results | Total::Processed | Total::DedupKeys => {
                format!("the trace has {trace} {} row(s)", Kind::EffectCommitted)
            }
        };
        let need = if at_least { "at least" } else { "exactly" };
        let lost = if !at_least && observed > trace {
            format!("; the store holds more than the trace: {LOST}")
        } else {
            String::new()
        };
        format!(
            "the observer read {key} = {observed} at seq {}, but {what} (needs {need} that){lost}",
            self.seq(observed_row)
        )
    }

    /// `external-single-effect`: the external receiver applied the event more than once.
    fn external_twice(&self, applied: &[usize]) -> String {
        format!(
            "the external receiver applied {} {} times (seq {}): its idempotency key did not hold",
            self.event,
            applied.len(),
            self.seqs(applied)
        )
    }

    /// `sources-agree`: the wire and the process's spans give different numbers of one life's
    /// steps of one kind and event; each side as (count, rows).
    fn sources_disagree(
        &self,
        (kind, actor, incarnation): (Kind, Id, u32),
        (wire, wire_rows): (u32, &[usize]),
        (span, span_rows): (u32, &[usize]),
    ) -> String {
        let rows = |rows: &[usize]| match rows {
            [] => String::new(),
            rows => format!(" (seq {})", self.seqs(rows)),
        };
        let (extra, meaning) = if span > wire {
            (
                "the spans have",
                "the service reported a step that never crossed the wire",
            )
        } else {
            (
                "the wire has",
                "a step crossed the wire that the service never reported",
            )
        };
        format!(
            "{kind} of {} by {}#{incarnation}: the wire shows {wire}{}, the service's spans report {span}{}; {extra} the extra row(s): {meaning}",
            self.event,
            self.names.name(actor),
            rows(wire_rows),
            rows(span_rows),
        )
    }

    /// `no-lost-task`: an accepted task on a recovered run never took effect.
    fn lost_task(&self, accepted: usize) -> String {
        format!(
            "task {} ({}) was accepted at seq {} and the run recovered, but no effect was ever committed for it",
            self.task,
            self.event,
            self.seq(accepted)
        )
    }
}

/// `the counter`, or `counter <key>` for one of several.
fn counter_name(key: Option<Id>, names: &Interner) -> String {
    match key {
        Some(k) => format!("counter {}", names.name(k)),
        None => "the counter".into(),
    }
}

/// What settled a delivery: a commit, or a suppression of a duplicate.
fn commit_word(kind: Kind) -> &'static str {
    match kind {
        Kind::DuplicateSuppressed => "suppression",
        _ => "commit",
    }
}
