//! The lab's services as fault specs name them: `etcd`, `nats`, `redis`, with `-N` for the N-th
//! member of a cluster (`nats-2`); the SQLite file is no process and cannot be restarted.

use crate::backend::services::ServiceKind;

/// The lab's name of a service kind, as fault specs write it.
pub fn service_name(kind: ServiceKind) -> &'static str {
    match kind {
        ServiceKind::Etcd => "etcd",
        ServiceKind::Nats => "nats",
        ServiceKind::Redis => "redis",
    }
}

/// Which service kind and member (0-based) a spec's service name means: `nats`, `nats-2`.
pub fn parse_service(name: &str) -> Option<(ServiceKind, usize)> {
    let (base, member) = match name.rsplit_once('-') {
        Some((base, n)) => (base, n.parse::<usize>().ok().filter(|n| *n >= 1)? - 1),
        None => (name, 0),
    };
    let kind = [ServiceKind::Etcd, ServiceKind::Nats, ServiceKind::Redis]
        .into_iter()
        .find(|k| service_name(*k) == base)?;
    Some((kind, member))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_names_read_as_kinds_and_members() {
        assert_eq!(parse_service("nats"), Some((ServiceKind::Nats, 0)));
        assert_eq!(parse_service("etcd-3"), Some((ServiceKind::Etcd, 2)));
        assert_eq!(parse_service("redis"), Some((ServiceKind::Redis, 0)));
        assert_eq!(parse_service("sqlite"), None);
        assert_eq!(parse_service("nats-0"), None);
    }
}
