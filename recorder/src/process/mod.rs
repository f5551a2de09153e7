//! Child processes and loopback ports: [`spawn`] is the one way the recorder starts a process
//! (in a process group of its own, with `PDEATHSIG`, without the recorder's secret variables),
//! [`port`] the one way it picks a free loopback port for something it starts; [`child`] one
//! process watched (its output logged, its last lines kept, its group signalled); [`server`] a
//! service process waited for until ready, restarted on its data, stopped; [`lives`] the lives
//! of one actor and the one restart back-off; [`reaper`] the strays a scenario's processes left,
//! found by the scenario's mark and by the [`groups`] its processes were started in;
//! [`mark`] the run's mark on every child, [`watchdog`] what kills everything a run started when the recorder itself is killed.
//!
//! [`mask`] hides the passwords in URLs of what leaves the recorder (a child's output quoted in an
//! error line, the system's configuration in the trace).
//!
//! It uses nothing else of the crate: every layer above may start processes through it.

pub mod child;
pub mod groups;
pub mod lives;
pub mod mark;
pub mod mask;
pub mod port;
pub mod reaper;
pub mod server;
pub mod spawn;
pub mod watchdog;
