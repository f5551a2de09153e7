//! The outbox protocol, written once: the API's create ([`api`]), the relay ([`relay`]) and the
//! worker ([`worker`]), each a sequence of steps over the [`ports`] a backend implements, run in
//! an actor life's [`ctx`]. Every backend runs this same code; every broken variant ([`variant`])
//! is a switch in it. The [`external`] effect (a payments receiver the worker calls with the
//! event's id as its idempotency key) is part of it.

pub mod api;
pub mod ctx;
pub mod external;
pub mod hold;
pub mod model;
pub mod ports;
pub mod relay;
pub mod variant;
pub mod worker;
