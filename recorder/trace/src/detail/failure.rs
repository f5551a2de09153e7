//! The details of what ended a life or hit a dependency: `crash.detail` and `fault.detail`.

use super::lenient::detail_struct;
use crate::fault::{CrashSite, FaultKind};

detail_struct! {
    /// `crash.detail`: where the actor died.
    pub struct Crash {
        /// The named crash point (`exit`, `kill`, `error`, `worker:after-effect_committed`,
        /// `relay:before-publish`, ...).
        pub point: CrashSite,
        /// The error that ended the life, for point `error`.
        pub error: Option<String>,
        /// The exit status of a process that exited on its own (point `exit`).
        pub status: Option<i32>,
        /// True when nothing of the life that ended can be missing from the trace (the recorder
        /// held the export that carried its last step); false when rows may be lost (a timed
        /// kill, an asynchronous exporter, an exit): such a life counts as one without its crash
        /// row.
        pub announced: Option<bool>,
        /// The `store_rev` of a commit the actor made and died before reporting, so the trace
        /// still names the commit that its next life or the observer will find in the store.
        pub committed_rev: Option<i64>,
    }
}

detail_struct! {
    /// `fault.detail`: what was done to a dependency.
    pub struct Fault {
        /// The fault's kind (`broker-restart`, `store-restart`, ...).
        pub fault: FaultKind,
        /// The program of the service hit (`etcd`, `nats-server`, `redis-server`).
        pub service: Option<String>,
        /// The member hit, by the name its producer gave it (`nats-server-1`, say).
        pub member: Option<String>,
        /// The signal that stopped the service (`SIGKILL` for a restart).
        pub signal: Option<String>,
        /// How long the service was down, in milliseconds.
        pub down_ms: Option<i64>,
        /// What the fault was aimed at, by the name its producer gave it (a service of a
        /// `--system` file, say).
        pub target: Option<String>,
        /// How long the fault lasted (a `pause`), in milliseconds.
        pub duration_ms: Option<u64>,
        /// For a wire fault: the bytes it dropped, both ways.
        pub dropped_bytes: Option<u64>,
        /// For a wire fault that loses one reply: the protocol messages it dropped.
        pub dropped_messages: Option<u64>,
        /// For a wire fault: the connections it reset or refused.
        pub resets: Option<u64>,
    }
}
