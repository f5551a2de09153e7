//! The backends: the store and broker operations the protocol's [`ports`](crate::protocol::ports)
//! need, one implementation per backend ([`etcd_jetstream`], [`sqlite_redis`]), the recorder's own
//! [`control`] over them, where the services are ([`connection`], [`endpoints`]), and the local
//! services the recorder starts itself ([`services`]).

pub mod connection;
pub mod control;
pub mod endpoints;
pub mod etcd_jetstream;
pub mod services;
pub mod sqlite_redis;
