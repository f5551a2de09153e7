//! Taking in what the listening proxies heard (a `[steps]` mapping): each fact a rule matches
//! becomes a row of the process whose connection it was, on the run's clock at the moment the
//! bytes crossed, and is followed as a span's step is (the shape learns it, the chaos draw arms
//! on it, the faults after it fire). The connection waits meanwhile: a kill after a step read
//! from a reply happens before the process reads the reply.
//!
//! A fact is a life's when it was heard after the life started and before its end was recorded.
//! The end of a life takes in first what its connections told until then (as a kill takes in the
//! exports already on their way): a `COMMIT` answered as the process died is its step, before
//! its `crash` row. A fact heard later from a life whose end is recorded gives no row: where it
//! changed the service (a commit, a publish, an ACK) the kinds it gives are counted refused, for
//! the trace misses that change; an answer that no process read is only counted as skipped.
//! Once the scenario's loop is over, facts are recorded and followed by no fault.
//!
//! Facts that could not be read (a connection's traffic unread from some point on, a fact the
//! proxy gave up telling) are counted refused too, by the kinds they could have given: the
//! analyzer then knows which verdicts rows could be missing from.

use std::sync::atomic::Ordering;
use std::time::Instant;

use outbox_trace::otlp::Why;
use outbox_trace::Kind;

use super::intake::{Called, Reported};
use super::shared::SystemError;
use super::stage::{HeldExport, Stage};
use crate::system::steps::NoStep;
use crate::wire::heard::Heard;
use crate::wire::Told;

/// Why a fact heard from a life that no longer runs gave no row.
const AFTER_ITS_LIFE: &str = "a step read from the wire after its process ended: not recorded";

/// Why the facts the proxies gave up telling gave no row.
const MISSED: &str = "a fact the proxy heard waited a whole hold for the recorder: not recorded";

/// Whether the faults after a fact's steps fire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Follow {
    /// They do: the scenario runs.
    Faults,
    /// They do not: the life is ending, or the scenario is.
    Nothing,
}

impl<'a, 'e> Stage<'a, 'e> {
    /// Records the steps of one fact told, and returns what holds its connection: the kills it
    /// called for, and the word that lets the connection go on (sent once they are done).
    pub(super) async fn hear(
        &mut self,
        told: Told,
        follow: Follow,
    ) -> Result<HeldExport, SystemError> {
        self.last_span = Instant::now();
        let life = self.lives.get(&told.actor).and_then(|life| {
            let running = life.ended.is_none() && life.started <= told.at;
            running.then_some(life.incarnation)
        });
        let Some(incarnation) = life else {
            self.after_its_life(&told);
            return Ok(HeldExport::letting_go(Vec::new(), told.go));
        };
        let mut called = Called::default();
        self.record_told(&told, incarnation, follow, &mut called)
            .await?;
        self.unqueue_killed(&called);
        Ok(HeldExport::letting_go(called.kills, told.go))
    }

    /// Records the steps of `told` as the life `incarnation`'s, following them if `follow`.
    async fn record_told(
        &mut self,
        told: &Told,
        incarnation: u32,
        follow: Follow,
        called: &mut Called,
    ) -> Result<(), SystemError> {
        let ts_ns = self.env.clock.now() - told.at.elapsed().as_nanos() as i64;
        let at_unix_ns = self.env.epoch_unix_ns + ts_ns.max(0) as u64;
        for heard in &told.heard {
            let Some(reading) = self.reading.as_mut() else {
                break;
            };
            for found in reading.read(&told.service, &told.actor, incarnation, heard) {
                let step = match found {
                    Ok(step) => step,
                    Err(no_step) => {
                        self.refuse(no_step);
                        continue;
                    }
                };
                let kind = step.kind();
                self.record(Self::author(&told.actor), incarnation, ts_ns, step)
                    .await?;
                if follow == Follow::Faults {
                    let actor = told.actor.clone();
                    let reported = Reported {
                        actor,
                        incarnation,
                        kind,
                        at_unix_ns,
                    };
                    self.follow(reported, called);
                }
            }
        }
        Ok(())
    }

    /// Counts a fact that gave no step where a rule could have matched.
    fn refuse(&mut self, no_step: NoStep) {
        let why = match no_step {
            NoStep::Lacks(missing) => Why::Refused(missing),
            NoStep::Unread { kind, why } => Why::Rejected { kind, reason: why },
        };
        self.drop_span(why);
    }

    /// A fact of a life whose end is recorded: a change it made to the service (the process's
    /// request, or a commit) is counted refused by the kinds it gives; an answer only skipped.
    fn after_its_life(&mut self, told: &Told) {
        let Some(reading) = self.reading.as_mut() else {
            return self.skip(AFTER_ITS_LIFE.to_string());
        };
        let mut kinds = Vec::new();
        for heard in &told.heard {
            let changed = matches!(
                heard,
                Heard::Committed(_) | Heard::Published(_) | Heard::Acked(_) | Heard::Unread { .. }
            );
            if changed {
                let found = reading.read(&told.service, &told.actor, 0, heard);
                kinds.extend(found.iter().map(|f| match f {
                    Ok(step) => step.kind(),
                    Err(NoStep::Lacks(m)) => m.kind,
                    Err(NoStep::Unread { kind, .. }) => *kind,
                }));
            }
        }
        if kinds.is_empty() {
            self.skip(AFTER_ITS_LIFE.to_string());
        }
        for kind in kinds {
            let reason = AFTER_ITS_LIFE;
            self.drop_span(Why::Rejected { kind, reason });
        }
    }

    /// Before the end of the life `incarnation` of `actor` is recorded: the facts told so far
    /// are taken in, that life's as its own (no fault follows them), the others' as usual; the
    /// others' holds are returned, to be carried out once the end is recorded.
    pub(super) async fn hear_before_end(
        &mut self,
        actor: &str,
        incarnation: u32,
    ) -> Result<Vec<HeldExport>, SystemError> {
        let mut later = Vec::new();
        while let Ok(told) = self.heard.try_recv() {
            let ending = told.actor == actor
                && self
                    .lives
                    .get(actor)
                    .is_some_and(|l| l.incarnation == incarnation && l.started <= told.at);
            if ending {
                let mut none = Called::default();
                self.record_told(&told, incarnation, Follow::Nothing, &mut none)
                    .await?;
                HeldExport::letting_go(Vec::new(), told.go).answer();
            } else {
                later.push(self.hear(told, Follow::Faults).await?);
            }
        }
        Ok(later)
    }

    /// Whether a span's step of `kind` is only the service's account (the wire reads that kind):
    /// recorded, not followed.
    pub(super) fn wire_reads(&self, kind: Kind) -> bool {
        self.env.system.steps.reads(kind)
    }

    /// Stops listening: what the proxies told and the loop did not read is recorded (no fault
    /// follows it) and let go; a proxy told nothing more lets its connection go on at once.
    pub(super) async fn stop_hearing(&mut self) -> Result<(), SystemError> {
        self.heard.close();
        while let Some(told) = self.heard.recv().await {
            self.hear(told, Follow::Nothing).await?.answer();
        }
        if self.missed.load(Ordering::Relaxed) > 0 {
            for kind in self.env.system.steps.kinds() {
                let reason = MISSED;
                self.drop_span(Why::Rejected { kind, reason });
            }
        }
        Ok(())
    }
}
