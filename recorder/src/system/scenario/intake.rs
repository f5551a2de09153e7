//! Taking one export request in: its spans become rows on the run's clock, each step teaches the
//! scenario's [`ShapeLearner`](crate::system::shape::ShapeLearner) (and through it arms the chaos
//! draw) and is shown to the scenario's [`Trigger`](crate::fault::trigger::Trigger), and the
//! export is answered at once unless a kill or a service's fault holds it until it is done.

use std::time::Instant;

use outbox_trace::otlp::{self, LiveEvent, Why};
use outbox_trace::Step;
use outbox_trace::{CrashSite, Kind};

use super::shared::SystemError;
use super::stage::{HeldExport, Kill, Stage};
use crate::fault::pauses::Pending;
use crate::fault::spec::What;
use crate::fault::trigger::Reporter;
use crate::system::file::Export;
use crate::system::receiver::{Answer, Intake};
use crate::system::shape::Seen;

/// The kinds only the recorder writes: a span that names one is refused.
const RECORDERS_KINDS: [Kind; 6] = [
    Kind::RunStart,
    Kind::RunEnd,
    Kind::Observed,
    Kind::Crash,
    Kind::Restart,
    Kind::Fault,
];

/// What one export's spans (or one fact a proxy told) called for.
#[derive(Default)]
pub(super) struct Called {
    /// The kills, carried out before the export is answered.
    pub(super) kills: Vec<Kill>,
    /// The pauses this export queues: which entry of `after` called for each, and whom.
    queued: Vec<(usize, String, u32)>,
    /// Why spans were refused for what they claimed.
    distrusted: Vec<&'static str>,
}

impl Called {
    /// A kill of `actor` is called for already.
    fn kills(&self, actor: &str) -> bool {
        self.kills.iter().any(|k| k.actor == actor)
    }
}

/// A step a process reported: whose life, which kind, and when it happened.
pub(super) struct Reported {
    pub(super) actor: String,
    pub(super) incarnation: u32,
    pub(super) kind: Kind,
    pub(super) at_unix_ns: u64,
}

/// A span's step that becomes a row: the step, its time on the run's clock, and its report.
struct Admitted {
    step: Step,
    ts_ns: i64,
    reported: Reported,
}

impl<'a, 'e> Stage<'a, 'e> {
    /// Records the rows of one export request and answers it, unless it calls for kills: then
    /// they are returned with the answer, which waits until they are done (see [`Stage::kill`]).
    pub(super) async fn take(&mut self, item: Intake) -> Result<HeldExport, SystemError> {
        self.last_span = Instant::now();
        let mapped = self.mapper.map(&item.request);
        for reason in &mapped.rejected {
            self.skip(reason.clone());
        }
        for d in &mapped.dropped {
            self.drop_span(d.why.clone());
        }
        let sender = self.sender(item.token.as_deref());
        let mut called = Called::default();
        for live in mapped.events {
            let Some(admitted) = self.admit(live, &sender, &mut called.distrusted) else {
                continue;
            };
            let Admitted {
                mut step,
                ts_ns,
                reported,
            } = admitted;
            // Where the wire reads steps too, a span's step says it is the service's account;
            // one of a kind the wire reads is recorded, not followed (the wire's step was).
            let account = self.reading.is_some();
            if let (true, Some(note)) = (account, step.note_mut()) {
                note.source = Some("span".to_string());
            }
            self.record(
                Self::author(&reported.actor),
                reported.incarnation,
                ts_ns,
                step,
            )
            .await?;
            if !self.wire_reads(reported.kind) {
                self.follow(reported, &mut called);
            }
        }
        self.unqueue_killed(&called);
        let answer = Answer {
            rejected_spans: (mapped.rejected.len() + called.distrusted.len()) as u64,
            error: mapped
                .rejected
                .first()
                .cloned()
                .or_else(|| called.distrusted.first().map(|w| format!("refused: {w}"))),
        };
        let mut held = HeldExport {
            kills: called.kills,
            reply: Some((item.reply, answer)),
            go: None,
        };
        if held.kills.is_empty() {
            held.answer();
        }
        Ok(held)
    }

    /// The process life the recorder gave the export's token to, while its spans are still that
    /// life's; else why the export's spans are refused.
    fn sender(&self, token: Option<&str>) -> Result<(String, u32), &'static str> {
        let given = token.and_then(|t| self.tokens.get(t));
        let unknown = if given.is_some() {
            "an export with the token of a process life that has ended"
        } else {
            "an export without the token of a process the recorder started"
        };
        given.and_then(|s| s.valid(Instant::now())).ok_or(unknown)
    }

    /// The step of one span, when it may become a row: of a kind a process writes, from the
    /// process that sent the export, complete, at a time a trace holds. A span refused for what
    /// it claims adds its reason to `distrusted`.
    fn admit(
        &mut self,
        live: LiveEvent,
        sender: &Result<(String, u32), &'static str>,
        distrusted: &mut Vec<&'static str>,
    ) -> Option<Admitted> {
        if let Some(kind) = &live.unknown_kind {
            self.drop_span(Why::Unmapped(format!("{}={kind}", otlp::key::KIND)));
            return None;
        }
        let mut event = live.event;
        let kind = event.kind;
        let rejected = |reason| Why::Rejected { kind, reason };
        if RECORDERS_KINDS.contains(&kind) {
            distrusted.push("a kind only the recorder writes");
            self.drop_span(rejected("a kind only the recorder writes"));
            return None;
        }
        let (actor, incarnation) = match sender {
            Ok(sender) => sender.clone(),
            Err(why) => {
                let why = *why;
                distrusted.push(why);
                self.drop_span(rejected(why));
                return None;
            }
        };
        if event.actor != actor {
            let why = "a span that claims another actor than the process that sent it";
            distrusted.push(why);
            self.drop_span(rejected(why));
            return None;
        }
        event.incarnation = incarnation;
        let step = match Step::try_from(&event) {
            Ok(step) => step,
            Err(missing) => {
                self.drop_span(Why::Refused(missing));
                return None;
            }
        };
        let kind = step.kind();
        let Ok(ts_ns) = i64::try_from(live.at_unix_ns.saturating_sub(self.env.epoch_unix_ns))
        else {
            let why = "a time past any a trace holds (2^63 ns from the run's start)";
            distrusted.push(why);
            self.drop_span(Why::Rejected { kind, reason: why });
            return None;
        };
        Some(Admitted {
            step,
            ts_ns,
            reported: Reported {
                actor,
                incarnation,
                kind,
                at_unix_ns: live.at_unix_ns,
            },
        })
    }

    /// A recorded step of a life still up: the shape learns it, and the faults it sets off are
    /// called for.
    pub(super) fn follow(&mut self, reported: Reported, called: &mut Called) {
        let Some(life) = self.lives.get(&reported.actor) else {
            return;
        };
        if life.incarnation != reported.incarnation {
            return;
        }
        let role = life.role.clone();
        let sync = self.env.system.file.roles[&role].export == Export::Sync;
        self.learn(&role, &reported);
        self.strike(reported, &role, sync, called);
    }

    /// The shape learns a step, and the chaos draw arms on the firsts it learned.
    fn learn(&mut self, role: &str, reported: &Reported) {
        let learned = self.shape.observe(Seen {
            role,
            actor: &reported.actor,
            incarnation: reported.incarnation,
            kind: reported.kind,
            at_unix_ns: reported.at_unix_ns,
            arrived_unix_ns: self.env.epoch_unix_ns + self.env.clock.now().max(0) as u64,
        });
        if let Some(chaos) = &mut self.chaos {
            if learned.first_of_kind {
                chaos.first_report(&mut self.trigger, role, reported.kind);
            }
            if let (Some((before, gap)), true) = (learned.after, learned.first_gap) {
                chaos.first_gap(&mut self.trigger, role, before, gap);
            }
        }
    }

    /// The step-following faults a step sets off: wire and service faults on at once, pauses
    /// queued, and a kill of the reporting life (announced when its role exports synchronously).
    fn strike(&mut self, reported: Reported, role: &str, sync: bool, called: &mut Called) {
        let Reported {
            actor,
            incarnation,
            kind,
            ..
        } = reported;
        let who = Reporter {
            actor: &actor,
            role,
            running: !self.pauses.holds(&actor) && !called.kills(&actor),
            has_sibling: self.has_running_sibling(&actor, role),
            at: self.first_task.elapsed(),
        };
        let struck = self.trigger.on_step(who, kind);
        let strike = struck.kill.is_some();
        // A wire fault is on before the export that set it off is answered.
        for i in struck.wire {
            let Some(armed) = self.trigger.armed().get(i) else {
                continue;
            };
            if let What::Wire { service, fault, .. } = &armed.nemesis.what {
                let (service, fault) = (service.clone(), *fault);
                self.wire(&actor, &service, fault);
            }
        }
        for i in struck.services {
            if let Some(armed) = self.trigger.armed().get(i) {
                self.service_faults.push(armed.nemesis.clone());
            }
        }
        for (i, delay, hold) in struck.pauses {
            called.queued.push((i, actor.clone(), incarnation));
            self.pauses.queue(Pending {
                at: Instant::now() + delay,
                actor: actor.clone(),
                life: incarnation,
                hold,
            });
        }
        if strike && !called.kills(&actor) {
            called.kills.push(Kill {
                actor,
                incarnation,
                point: CrashSite::after_step(role, kind),
                announced: sync,
            });
        }
    }

    /// A process this export kills is not paused by it: its pauses wait for a later step.
    pub(super) fn unqueue_killed(&mut self, called: &Called) {
        for (i, actor, life) in &called.queued {
            if called
                .kills
                .iter()
                .any(|k| k.actor == *actor && k.incarnation == *life)
            {
                self.trigger.rearm(*i);
                self.pauses.unqueue(actor, *life);
            }
        }
    }

    /// Counts a span that gave no row in `run_end`'s counts; a refused one also as skipped.
    pub(super) fn drop_span(&mut self, why: Why) {
        self.outcome.dropped.add(&why);
        match why {
            Why::Refused(missing) => self.skip(missing.to_string()),
            Why::Rejected { kind, reason } => self.skip(format!("{kind}: refused, {reason}")),
            Why::Kindless => {
                self.skip("a span with outbox.* attributes but no kind: refused".to_string())
            }
            Why::Unmapped(_) | Why::Copy => {}
        }
    }

    pub(super) fn skip(&mut self, reason: String) {
        self.outcome.skipped_count += 1;
        if self.outcome.skipped.len() < 3 {
            self.outcome.skipped.push(reason);
        }
    }
}
