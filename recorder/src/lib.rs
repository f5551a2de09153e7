//! `outbox-recorder`: runs the transactional-outbox protocol against real services, injects the
//! named faults, and writes every step to an `outbox-trace/1` trace.
//!
//! The layers, from the bottom; each folder uses only those before it:
//!
//! - [`process`]: starting a child process (its own process group, `PDEATHSIG`, none of the
//!   recorder's secret variables) and picking a free loopback port;
//! - [`journal`]: who writes a row, the run's clock, the trace's one writer, and the guards on
//!   the trace's place on disk (checked, locked, never overwritten by what is not complete);
//! - [`fault`]: crash points, the plan that arms them, the seeded chaos draw;
//! - [`wire`]: the loopback proxy between a process and a service, for both subjects: bytes
//!   relayed, the protocols it reads (PostgreSQL, NATS), the wire faults carried out on them;
//! - [`protocol`]: the API, relay and worker steps, written once against its ports, the
//!   context a step reports through, and the external effect (the payments receiver and the
//!   worker's client for it);
//! - [`backend`]: the ports on etcd + JetStream and on SQLite + Redis, the recorder's control
//!   over them, the services' addresses and the local services;
//! - [`driver`]: one scenario of the lab: the actor processes (each plays one protocol role),
//!   the chaos, the ground truth, quiet;
//! - [`system`]: a user's own system under the recorder's faults (`--system FILE`): its file,
//!   its processes and services, its tasks, the OTLP receiver that takes its spans in;
//! - [`cli`]: the command line, `recorder run`'s resolved configuration, the exit codes;
//! - [`run`]: one recording from start to end, and each subcommand's glue
//!   ([`run::commands`]).
//!
//! `main` only parses the command line and calls [`run::commands::dispatch`]. The benchmark that
//! measures the README's figures is the `outbox-bench` crate, a user of this library.

pub mod backend;
pub mod cli;
pub mod driver;
pub mod fault;
pub mod journal;
pub mod process;
pub mod protocol;
pub mod run;
pub mod system;
pub mod wire;

pub use cli::config::RunConfig;
pub use cli::exit::Failure;
pub use run::recording::RunOutcome;
pub use run::{run, run_system};
