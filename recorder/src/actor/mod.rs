//! The actor side: one OS process per actor life. [`id`] names actors (a leaf everything may use),
//! [`wire`] is what goes over the process's standard input and output, [`ctx`] is what the protocol
//! steps report through, and [`process`] is the process's entry point.

pub mod ctx;
pub mod id;
pub mod process;
pub mod wire;
