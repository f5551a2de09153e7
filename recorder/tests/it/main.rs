//! The recorder's integration tests, one binary: each module runs the real `recorder` binary
//! against services it starts itself (etcd, nats-server, redis-server, SQLite files) and reads the
//! trace back through the contract crate and the analyzer.

mod chaos;
mod ci_recipe;
mod clobber;
mod common;
mod conformance;
mod coverage;
mod endings;
mod errors;
mod explore;
mod explore_resume;
mod external;
mod interop;
mod kafka;
mod kept;
mod lab;
mod lab_faults;
mod layers;
mod leftovers;
mod lifecycle;
mod load;
mod node_postgres;
mod node_wire;
mod otlp;
mod otlp_receiver;
mod otlp_receiver_bounds;
mod postgres_listen;
mod rabbitmq;
mod secrets;
mod span_partition;
mod sqlite_lab;
mod startup;
mod system;
mod system_async;
mod system_omit;
mod trust;
mod wire;
