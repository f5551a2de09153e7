//! Steps read from the wire: a system file's `[steps]` says which of a process's exchanges
//! with its services are steps of the outbox, and where each step's ids and numbers are. The
//! proxy between each process and each service already reads PostgreSQL and NATS
//! ([`crate::wire::heard`]); with a mapping it tells what it hears, and each fact a rule matches
//! becomes a row, as a span's step does: same columns, the actor of the process whose connection
//! it was, `detail.source = "wire"`.
//!
//! ```toml
//! [steps.effect_committed]                # a committed transaction that
//! on = "postgres"                         #   went to this service
//! commit = "insert into results"          #   and inserted into `results`
//! event_id = "results.event_id"           # a column (the row it returned, else its parameter)
//! task_id = "results.$2"                  # or a bound parameter
//! counter = "counters.value"              # any statement of the same transaction
//!
//! [steps.delivered]                       # a copy JetStream delivered (and redelivered)
//! on = "nats"
//! subject = "orders"
//! event_id = "payload:/event_id"          # a JSON pointer into the payload, or header:NAME
//! ```
//!
//! The columns the wire itself gives are not mapped: `store_rev` (the order in which the
//! proxies saw the service's commits answered, unless every commit rule maps a column for it:
//! a version the transaction wrote and returned), `attempt` and `broker_seq` (JetStream's
//! delivery count and stream sequence, the publish ACK's sequence, the process's own count of
//! publishes of one event). The file's [`spec`] is checked by [`rules`] ([`Steps::check`]) before anything starts;
//! [`read`] applies the rules to what a proxy heard; [`sql`] and [`value`] read statements and
//! references.

mod read;
mod rules;
pub mod spec;
mod sql;
mod value;

pub use read::{Found, NoStep, Reading};
pub use rules::{On, Rule, Steps};

#[cfg(test)]
mod tests;
