//! Taking in what the listening proxies heard (a `[steps]` mapping): each fact a rule matches
//! becomes a row of the process whose connection it was, on the run's clock at the moment the
//! bytes crossed, and is followed as a span's step is (the shape learns it, the chaos draw arms
//! on it, the faults after it fire). The connection waits meanwhile: a kill after a step read
//! from a reply happens before the process reads the reply.
//!
//! A fact is a life's when it was heard while the life ran: one heard before the current life
//! started, or after it exited, belongs to a life whose crash is (or is about to be) recorded,
//! and is counted as skipped instead.

use outbox_trace::Kind;
use tokio::sync::mpsc;

use super::intake::{Called, Reported};
use super::shared::SystemError;
use super::stage::{HeldExport, Stage};
use crate::wire::Told;

/// Why a fact heard from a life that no longer runs gave no row.
const AFTER_ITS_LIFE: &str = "a step read from the wire after its process ended: not recorded";

impl<'a, 'e> Stage<'a, 'e> {
    /// Records the steps of one fact told, and returns what holds its connection: the kills it
    /// called for, and the word that lets the connection go on (sent once they are done).
    pub(super) async fn hear(&mut self, told: Told) -> Result<HeldExport, SystemError> {
        self.last_span = std::time::Instant::now();
        let mut called = Called::default();
        let life = self.lives.get(&told.actor).and_then(|life| {
            let running = life.child.exited().is_none() && life.started <= told.at;
            running.then(|| (life.incarnation, life.role.clone()))
        });
        let Some((incarnation, _role)) = life else {
            self.skip(AFTER_ITS_LIFE.to_string());
            return Ok(HeldExport::letting_go(Vec::new(), told.go));
        };
        let ts_ns = self.env.clock.now() - told.at.elapsed().as_nanos() as i64;
        let at_unix_ns = self.env.epoch_unix_ns + ts_ns.max(0) as u64;
        for heard in &told.heard {
            let Some(reading) = self.reading.as_mut() else {
                break;
            };
            for found in reading.read(&told.service, &told.actor, incarnation, heard) {
                let step = match found {
                    Ok(step) => step,
                    Err(why) => {
                        self.skip(why);
                        continue;
                    }
                };
                let kind = step.kind();
                self.record(Self::author(&told.actor), incarnation, ts_ns, step)
                    .await?;
                let reported = Reported {
                    actor: told.actor.clone(),
                    incarnation,
                    kind,
                    at_unix_ns,
                };
                self.follow(reported, &mut called);
            }
        }
        self.unqueue_killed(&called);
        Ok(HeldExport::letting_go(called.kills, told.go))
    }

    /// Whether a span's step of `kind` is only the service's account (the wire reads that kind):
    /// recorded, not followed.
    pub(super) fn wire_reads(&self, kind: Kind) -> bool {
        self.env.system.steps.reads(kind)
    }

    /// Takes in what the proxies told and the loop has not read, then stops listening: a
    /// proxy told nothing more lets its connection go on at once.
    pub(super) async fn stop_hearing(
        &mut self,
        heard: &mut mpsc::Receiver<Told>,
        intake: &mut mpsc::Receiver<crate::system::receiver::Intake>,
    ) -> Result<(), SystemError> {
        while let Ok(told) = heard.try_recv() {
            let held = self.hear(told).await?;
            self.carry_out(held, intake).await?;
        }
        heard.close();
        Ok(())
    }
}
