//! Named crash points and the plan that arms them.
//!
//! A crash point sits in a gap between two protocol steps. It is named by the gap, not by the
//! steps' order, so a broken protocol that swaps the steps crashes in the same gap: in the
//! reference relay `before-publish` comes before everything, in `mark-before-publish` it falls
//! between the mark and the publish, which is exactly the window that loses the event.
//!
//! Faults are armed only from the recorder's command line and reach an actor process through its
//! standard input: no network port exposes them.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::journal::author::Role;

use super::dice::Dice;

/// Exit code of an actor process that died at a crash point.
pub const CRASH_EXIT_CODE: i32 = 86;

/// A named place in the protocol where an actor process can die.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CrashPoint {
    /// The API wrote the task (and, in the reference, its outbox record), not yet the reply; in
    /// `split-outbox` the outbox record is not written yet.
    #[serde(rename = "api:between-task-and-outbox")]
    ApiBetweenTaskAndOutbox,
    /// The API's create committed and the API has not reported it yet: the window in which a
    /// killed API leaves a task in the store and not in the trace, and its client retries.
    #[serde(rename = "api:before-reporting-create")]
    ApiBeforeReportingCreate,
    /// The API reported a create's `task_accepted` and not yet its `intent_recorded`: only the
    /// store still knows the outbox record.
    #[serde(rename = "api:before-reporting-intent")]
    ApiBeforeReportingIntent,
    /// The relay is about to send the first copy of an event.
    #[serde(rename = "relay:before-publish")]
    RelayBeforePublish,
    /// The relay did the first of publish and mark, not the second.
    #[serde(rename = "relay:between-publish-and-mark")]
    RelayBetweenPublishAndMark,
    /// The worker did the first of commit and ACK, not the second.
    #[serde(rename = "worker:between-commit-and-ack")]
    WorkerBetweenCommitAndAck,
    /// The worker's commit went through and the worker has not reported it yet: the window in
    /// which a killed worker leaves a commit in the store and not in the trace.
    #[serde(rename = "worker:before-reporting-commit")]
    WorkerBeforeReportingCommit,
    /// The worker sent its request to the external receiver and has not read the answer.
    #[serde(rename = "worker:after-external-request")]
    WorkerAfterExternalRequest,
    /// The worker has the external receiver's answer and has not committed locally.
    #[serde(rename = "worker:after-external-answer")]
    WorkerAfterExternalAnswer,
}

impl CrashPoint {
    /// Every crash point.
    pub const ALL: [CrashPoint; 9] = [
        CrashPoint::ApiBeforeReportingCreate,
        CrashPoint::ApiBeforeReportingIntent,
        CrashPoint::ApiBetweenTaskAndOutbox,
        CrashPoint::RelayBeforePublish,
        CrashPoint::RelayBetweenPublishAndMark,
        CrashPoint::WorkerAfterExternalRequest,
        CrashPoint::WorkerAfterExternalAnswer,
        CrashPoint::WorkerBeforeReportingCommit,
        CrashPoint::WorkerBetweenCommitAndAck,
    ];

    /// The role whose actor passes through the point.
    pub fn role(self) -> Role {
        match self {
            CrashPoint::ApiBetweenTaskAndOutbox
            | CrashPoint::ApiBeforeReportingCreate
            | CrashPoint::ApiBeforeReportingIntent => Role::Api,
            CrashPoint::RelayBeforePublish | CrashPoint::RelayBetweenPublishAndMark => Role::Relay,
            CrashPoint::WorkerBetweenCommitAndAck
            | CrashPoint::WorkerBeforeReportingCommit
            | CrashPoint::WorkerAfterExternalRequest
            | CrashPoint::WorkerAfterExternalAnswer => Role::Worker,
        }
    }

    /// The point's name, as written to `detail.point` of a `crash` event.
    pub fn name(self) -> &'static str {
        match self {
            CrashPoint::ApiBetweenTaskAndOutbox => "api:between-task-and-outbox",
            CrashPoint::ApiBeforeReportingCreate => "api:before-reporting-create",
            CrashPoint::ApiBeforeReportingIntent => "api:before-reporting-intent",
            CrashPoint::RelayBeforePublish => "relay:before-publish",
            CrashPoint::RelayBetweenPublishAndMark => "relay:between-publish-and-mark",
            CrashPoint::WorkerBetweenCommitAndAck => "worker:between-commit-and-ack",
            CrashPoint::WorkerAfterExternalRequest => "worker:after-external-request",
            CrashPoint::WorkerAfterExternalAnswer => "worker:after-external-answer",
            CrashPoint::WorkerBeforeReportingCommit => "worker:before-reporting-commit",
        }
    }
}

impl fmt::Display for CrashPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One injected fault. Each fires once per scenario: after it fired, the next incarnation of the
/// actor is started without it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "fault")]
pub enum Fault {
    /// Exit the process the first time the point is reached.
    Crash {
        /// The point at which the process exits.
        point: CrashPoint,
    },
    /// Exit at the point by chance: each pass dies with probability `per_mille` / 1000. Never
    /// spent within a life; the chaos plan's swarm stops arming it in new lives once the window's
    /// budget of firings is used up.
    Chance {
        /// The point whose every pass may kill the process.
        point: CrashPoint,
        /// How likely one pass dies, in per mille.
        per_mille: u32,
    },
    /// Send the first publish with a reply inbox nobody listens on: the broker stores the copy and
    /// the relay never sees the ACK.
    LosePublishAck,
    /// Pause between reading the counter and committing, on every delivery, so that concurrent
    /// workers overlap (never "fires": it stays for every incarnation).
    StallBeforeCommit {
        /// How long each pause lasts.
        millis: u64,
    },
}

impl Fault {
    /// Whether the fault is spent once it fired.
    pub fn once(&self) -> bool {
        !matches!(self, Fault::StallBeforeCommit { .. } | Fault::Chance { .. })
    }
}

/// The faults armed in one actor incarnation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultPlan {
    /// The faults armed in this life; one that fired and is spent is left out of the next life's
    /// plan.
    pub faults: Vec<Fault>,
    /// Seeds the dice of the life's chance faults.
    #[serde(default)]
    pub seed: u64,
}

impl FaultPlan {
    /// A plan with these faults.
    pub fn new(faults: Vec<Fault>) -> Self {
        FaultPlan { faults, seed: 0 }
    }

    /// The fault that kills the life at `point`, if any: an armed crash, or a chance fault whose
    /// roll of `dice` came up.
    pub fn crash_at(&self, point: CrashPoint, dice: &mut Dice) -> Option<Fault> {
        self.faults.iter().find_map(|fault| match *fault {
            Fault::Crash { point: p } if p == point => Some(fault.clone()),
            Fault::Chance {
                point: p,
                per_mille,
            } if p == point => (dice.below(1000) < u64::from(per_mille)).then(|| fault.clone()),
            _ => None,
        })
    }

    /// Disarms a fault that fired (no-op for faults that are not spent).
    pub fn disarm(&mut self, fault: &Fault) {
        if fault.once() {
            self.faults.retain(|f| f != fault);
        }
    }

    /// Takes the lost-publish-ACK fault if armed.
    pub fn take_lose_publish_ack(&mut self) -> bool {
        let armed = self.faults.contains(&Fault::LosePublishAck);
        self.disarm(&Fault::LosePublishAck);
        armed
    }

    /// The stall before a commit, if armed.
    pub fn stall_before_commit(&self) -> Option<std::time::Duration> {
        self.faults.iter().find_map(|f| match f {
            Fault::StallBeforeCommit { millis } => Some(std::time::Duration::from_millis(*millis)),
            _ => None,
        })
    }
}
