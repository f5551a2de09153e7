//! Service endpoints as the user gave them, with credentials kept out of everything we print or
//! record: [`Endpoint`]'s `Display` and [`Endpoint::redacted`] never show a user name, password or
//! token.
//!
//! An endpoint may name the members of a cluster, comma-separated
//! (`http://10.0.0.1:2379,http://10.0.0.2:2379`): the clients connect to any of them.
//!
//! The recorder's own `OUTBOX_TRACE_*` variables may hold such credentials:
//! [`crate::process::spawn`] keeps them out of every child process (an actor gets its endpoints
//! through its spec, on a pipe).

use std::fmt;

use serde::{Deserialize, Serialize};

/// A service URL, or a comma-separated list of them, possibly with `user:password@` or `token@`
/// in it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    url: String,
}

/// A URL the recorder cannot use.
#[derive(Debug, thiserror::Error)]
#[error("bad {service} URL `{shown}`: {reason}")]
pub struct BadEndpoint {
    service: &'static str,
    shown: String,
    reason: String,
}

impl Endpoint {
    /// Parses `raw` as a URL for `service`, accepting only the `schemes` given.
    pub fn parse(service: &'static str, raw: &str, schemes: &[&str]) -> Result<Self, BadEndpoint> {
        let bad = |reason: String| BadEndpoint {
            service,
            shown: redact(raw),
            reason,
        };
        for part in raw.split(',') {
            let url = url::Url::parse(part.trim()).map_err(|e| bad(e.to_string()))?;
            if !schemes.contains(&url.scheme()) {
                return Err(bad(format!(
                    "the scheme must be one of {}",
                    schemes.join(", ")
                )));
            }
            if url.host_str().is_none() {
                return Err(bad("no host".into()));
            }
        }
        Ok(Endpoint {
            url: raw.to_string(),
        })
    }

    /// A local service's URL (no credentials).
    pub fn local(url: String) -> Self {
        Endpoint { url }
    }

    /// The full URL, credentials included: only for handing to a client library.
    pub fn secret_url(&self) -> &str {
        &self.url
    }

    /// `host:port` of every member (no scheme, no credentials).
    pub fn host_ports(&self) -> Vec<String> {
        self.members()
            .map(|part| match url::Url::parse(part) {
                Ok(u) => format!(
                    "{}:{}",
                    u.host_str().unwrap_or_default(),
                    u.port_or_known_default().unwrap_or_default()
                ),
                Err(_) => redact(part),
            })
            .collect()
    }

    /// `user` and `password`, if the (first) URL carries them.
    pub fn credentials(&self) -> Option<(String, String)> {
        let u = url::Url::parse(self.members().next()?).ok()?;
        if u.username().is_empty() {
            return None;
        }
        Some((
            u.username().to_string(),
            u.password().unwrap_or_default().to_string(),
        ))
    }

    /// The URL with any user name, password or token replaced by `***`.
    pub fn redacted(&self) -> String {
        self.members().map(redact).collect::<Vec<_>>().join(",")
    }

    fn members(&self) -> impl Iterator<Item = &str> {
        self.url.split(',').map(str::trim)
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Endpoint({})", self.redacted())
    }
}

fn redact(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(mut u) => {
            let had = !u.username().is_empty() || u.password().is_some();
            if had {
                let _ = u.set_password(None);
                let _ = u.set_username("***");
            }
            // A query may hold a token too: drop it.
            u.set_query(None);
            u.to_string()
        }
        Err(_) => "<unparsable URL>".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_never_show() {
        let e = Endpoint::parse(
            "etcd",
            "http://alice:s3cret@10.0.0.1:2379",
            &["http", "https"],
        )
        .unwrap();
        assert_eq!(e.to_string(), "http://***@10.0.0.1:2379/");
        assert!(!format!("{e:?}").contains("s3cret"));
        assert_eq!(e.credentials(), Some(("alice".into(), "s3cret".into())));
        let t = Endpoint::parse("nats", "nats://tok3n@127.0.0.1:4222", &["nats"]).unwrap();
        assert!(!t.redacted().contains("tok3n"));
        let err = Endpoint::parse("nats", "nats://u:pw@[bad", &["nats"]).unwrap_err();
        assert!(!err.to_string().contains("pw"));
        let q = Endpoint::parse("nats", "nats://h:4222/?token=abc", &["nats"]).unwrap();
        assert!(!q.redacted().contains("abc"));
    }

    #[test]
    fn a_cluster_is_a_list_of_members() {
        let e = Endpoint::parse(
            "etcd",
            "http://u:pw@127.0.0.1:1,http://u:pw@127.0.0.1:2",
            &["http"],
        )
        .unwrap();
        assert_eq!(e.host_ports(), ["127.0.0.1:1", "127.0.0.1:2"]);
        assert_eq!(
            e.redacted(),
            "http://***@127.0.0.1:1/,http://***@127.0.0.1:2/"
        );
        assert!(Endpoint::parse("etcd", "http://a:1,ftp://b:2", &["http"]).is_err());
    }
}
