//! The actor process (`recorder actor`, `recorder receiver`): one OS process per actor life. The
//! recorder writes its [`spec::ActorSpec`] to the process's standard input; [`process`] connects
//! to the services and plays the role.

pub mod process;
pub mod spec;
