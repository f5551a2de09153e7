//! An external effect outside the worker's transaction: a small "payments" receiver over HTTP with
//! an idempotency API ([`receiver`]), and the worker's client for it ([`client`]); [`spec`] is
//! what both share.

pub mod client;
pub mod receiver;
pub mod spec;
