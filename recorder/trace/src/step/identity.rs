//! The identity columns every row has besides its kind's, and the error of a row that lacks what
//! its kind requires.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{Event, Field, Kind};

/// The columns every row has besides its kind's: who recorded it, in which run and scenario, and
/// when.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// `run_id`: the recording the row belongs to; `seq` is unique within it.
    pub run_id: String,
    /// `scenario`: the invariants are checked per `(run_id, scenario)`.
    pub scenario: String,
    /// `seq`: the order in which the recorder received the row, strictly increasing within the run.
    pub seq: u64,
    /// `ts_ns`: nanoseconds since the run started, on a monotonic clock shared by all actors.
    pub ts_ns: i64,
    /// `backend`: the producer's name, such as `etcd-jetstream` or `sqlite-redis`.
    pub backend: String,
    /// `actor`: who recorded the row (`api`, `relay`, `worker`, `observer`, ...), maybe suffixed.
    pub actor: String,
    /// `incarnation`: the actor's life, 0 at first and one more after each crash and restart.
    pub incarnation: u32,
}

impl Identity {
    /// The identity columns of a row.
    pub fn of(e: &Event) -> Identity {
        Identity {
            run_id: e.run_id.clone(),
            scenario: e.scenario.clone(),
            seq: e.seq,
            ts_ns: e.ts_ns,
            backend: e.backend.clone(),
            actor: e.actor.clone(),
            incarnation: e.incarnation,
        }
    }
}

/// A row that lacks fields its kind requires, so it is no [`Step`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct MissingFields {
    /// The kind of the rejected row, which decides the fields it needed.
    pub kind: Kind,
    /// The required fields it lacks (`detail` also when it is not a JSON object).
    pub fields: Vec<Field>,
}

impl fmt::Display for MissingFields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.fields.iter().map(|f| f.column()).collect();
        write!(f, "a `{}` row lacks {}", self.kind, names.join(", "))
    }
}

impl Identity {
    /// A row of `kind` with these identity columns and every other column empty.
    pub(super) fn row(self, kind: Kind) -> Event {
        let mut e = Event::new(kind);
        e.run_id = self.run_id;
        e.scenario = self.scenario;
        e.seq = self.seq;
        e.ts_ns = self.ts_ns;
        e.backend = self.backend;
        e.actor = self.actor;
        e.incarnation = self.incarnation;
        e
    }
}
