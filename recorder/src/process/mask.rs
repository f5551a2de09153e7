//! Credentials in URLs, masked wherever a text leaves the recorder: the system's configuration
//! in `run_start`, and a child's output quoted in an error line (a setup that prints its
//! database URL must not show its password). It uses nothing else of the crate.

/// `redis://user:secret@host` -> `redis://user:***@host`; `nats://token@host` -> `nats://***@host`.
pub fn mask_url(text: &str) -> String {
    let Some(scheme_end) = text.find("://") else {
        return text.to_string();
    };
    let rest = &text[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return text.to_string();
    };
    let userinfo = &rest[..at];
    let masked = match userinfo.split_once(':') {
        Some((user, _)) => format!("{user}:***"),
        None => "***".to_string(),
    };
    format!("{}{masked}{}", &text[..scheme_end + 3], &rest[at..])
}

/// Every URL in `text` with its password (or token) masked, the rest as it is.
pub fn mask_urls(text: &str) -> String {
    if !text.contains("://") {
        return text.to_string();
    }
    text.split_inclusive(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | ','))
        .map(mask_url)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{mask_url, mask_urls};

    #[test]
    fn passwords_in_urls_are_masked() {
        assert_eq!(
            mask_url("redis://u:pw@127.0.0.1:6379/0"),
            "redis://u:***@127.0.0.1:6379/0"
        );
        assert_eq!(mask_url("nats://tok@h:4222"), "nats://***@h:4222");
        assert_eq!(mask_url("http://h:1/a@b"), "http://h:1/a@b");
        assert_eq!(mask_url("plain"), "plain");
    }

    #[test]
    fn every_url_in_a_text_is_masked() {
        assert_eq!(
            mask_urls(
                "connecting to postgres://app:s3cret@db:5432/x and nats://tok@h:4222, failed"
            ),
            "connecting to postgres://app:***@db:5432/x and nats://***@h:4222, failed"
        );
        assert_eq!(
            mask_urls("DATABASE_URL=\"redis://:pw@h\""),
            "DATABASE_URL=\"redis://:***@h\""
        );
        assert_eq!(mask_urls("no url here"), "no url here");
    }
}
