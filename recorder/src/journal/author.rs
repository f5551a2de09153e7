//! Who writes a row: an actor (its role, and which of the role's actors) or a part of the
//! recorder itself. The `actor` column is made here and nowhere else.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The roles an actor process can play.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Creates the scenario's tasks, then exits.
    Api,
    /// Publishes pending outbox records until told to stop.
    Relay,
    /// Consumes and commits effects until told to stop.
    Worker,
    /// Serves the external payments API until told to stop.
    Receiver,
}

impl Role {
    /// The actor name prefix.
    pub fn name(self) -> &'static str {
        match self {
            Role::Api => "api",
            Role::Relay => "relay",
            Role::Worker => "worker",
            Role::Receiver => "receiver",
        }
    }
}

/// One actor of a scenario: its role, and which of the role's actors when there are several.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActorId {
    pub role: Role,
    /// 1-based, among several actors of the role (`None`: the only one).
    pub index: Option<u32>,
}

impl ActorId {
    /// The only actor of `role`.
    pub fn only(role: Role) -> Self {
        ActorId { role, index: None }
    }
}

/// `worker`, `worker-2`, ...: the actor's name in the trace.
impl fmt::Display for ActorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.role.name())?;
        match self.index {
            Some(i) => write!(f, "-{i}"),
            None => Ok(()),
        }
    }
}

/// Who writes a row: an actor process, or the recorder itself in one of its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Author {
    /// An actor's own report.
    Actor(ActorId),
    /// A process of a user's own system, by its actor name (`api`, `worker-2`).
    Process(std::sync::Arc<str>),
    /// The recorder: `run_start`, `run_end`, and the crash of a life that could not report it.
    Recorder,
    /// What was read back from the services.
    Observer,
    /// Faults injected on the services.
    Faults,
}

impl From<ActorId> for Author {
    fn from(id: ActorId) -> Self {
        Author::Actor(id)
    }
}

/// The `actor` column.
impl fmt::Display for Author {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Author::Actor(id) => id.fmt(f),
            Author::Process(name) => f.write_str(name),
            Author::Recorder => f.write_str("recorder"),
            Author::Observer => f.write_str("observer"),
            Author::Faults => f.write_str("faults"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actors_are_named_by_role_and_index() {
        let worker = |index| ActorId {
            role: Role::Worker,
            index,
        };
        assert_eq!(worker(Some(2)).to_string(), "worker-2");
        assert_eq!(worker(None).to_string(), "worker");
        assert_eq!(
            Author::from(ActorId::only(Role::Relay)).to_string(),
            "relay"
        );
        assert_eq!(Author::Observer.to_string(), "observer");
        assert_eq!(Author::Faults.to_string(), "faults");
        assert_eq!(Author::Recorder.to_string(), "recorder");
    }
}
