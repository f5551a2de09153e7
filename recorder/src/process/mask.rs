//! Credentials, masked wherever a text leaves the recorder: the system's configuration in
//! `run_start`, and a child's output quoted in an error line (a setup that prints its database
//! URL must not show its password). Masked are a URL's userinfo, the value of every `name=value`
//! whose name says it is a secret (`?password=`, libpq's `password=`, `--api-key=`, `token=`), and
//! what follows `Authorization:`. It uses nothing else of the crate.

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

/// Whether a setting, header or parameter called `name` holds a secret: an `Authorization` or
/// `Cookie` header, or a name with `password`, `secret`, `token`, `api-key` or `credential` in it.
pub fn is_secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let words = [
        "password",
        "passwd",
        "secret",
        "token",
        "apikey",
        "api_key",
        "api-key",
        "credential",
        "authorization",
        "cookie",
    ];
    name == "pwd" || words.iter().any(|w| name.contains(w))
}

/// Every credential in `text` masked: URLs' userinfo, secret `name=value` parameters, and what
/// follows `Authorization:`; the rest as it is.
pub fn mask_secrets(text: &str) -> String {
    mask_authorization(&mask_params(&mask_urls(text)))
}

/// `a=1,authorization=Bearer x` (a list of headers, as `OTEL_EXPORTER_OTLP_HEADERS` holds) with
/// every value masked: `a=***,authorization=***`.
pub fn mask_header_list(text: &str) -> String {
    text.split(',')
        .map(|h| match h.split_once('=') {
            Some((name, _)) => format!("{name}=***"),
            None => h.to_string(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The value of every `name=value` whose name is a secret's, masked.
fn mask_params(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(eq) = rest.find('=') {
        let (head, value) = (&rest[..eq], &rest[eq + 1..]);
        let name_at = head
            .char_indices()
            .rev()
            .find(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
            .map_or(0, |(i, c)| i + c.len_utf8());
        out.push_str(head);
        out.push('=');
        if name_at < head.len() && is_secret_name(&head[name_at..]) {
            out.push_str("***");
            rest = &value[value_end(value)..];
        } else {
            rest = value;
        }
    }
    out.push_str(rest);
    out
}

/// Where a parameter's value ends: its closing quote, or the first separator.
fn value_end(value: &str) -> usize {
    if let Some(q @ ('\'' | '"')) = value.chars().next() {
        return value[1..].find(q).map_or(value.len(), |i| i + 2);
    }
    value
        .find(|c: char| c.is_whitespace() || matches!(c, '&' | ',' | ';' | '"' | '\'' | '#'))
        .unwrap_or(value.len())
}

/// What follows `Authorization:` (to the end of the line or a quote), masked.
fn mask_authorization(text: &str) -> String {
    const HEADER: &str = "authorization:";
    let lower = text.to_ascii_lowercase();
    let Some(at) = lower.find(HEADER) else {
        return text.to_string();
    };
    let from = at + HEADER.len();
    let rest = &text[from..];
    let end = rest.find(['\n', '"', '\'']).unwrap_or(rest.len());
    format!("{} ***{}", &text[..from], mask_authorization(&rest[end..]))
}

#[cfg(test)]
mod tests {
    use super::{mask_header_list, mask_secrets, mask_url, mask_urls};

    #[test]
    fn secrets_outside_userinfo_are_masked() {
        assert_eq!(
            mask_secrets("postgres://db/x?sslmode=off&password=s3cret&user=a"),
            "postgres://db/x?sslmode=off&password=***&user=a"
        );
        assert_eq!(
            mask_secrets("host=db password='a b' user=app"),
            "host=db password=*** user=app"
        );
        assert_eq!(
            mask_secrets("curl -H 'Authorization: Bearer abc' --api-key=k1 http://h"),
            "curl -H 'Authorization: ***' --api-key=*** http://h"
        );
        assert_eq!(mask_secrets("PGPASSWORD=pw psql"), "PGPASSWORD=*** psql");
        assert_eq!(mask_secrets("x=1 y=2"), "x=1 y=2");
        assert_eq!(
            mask_header_list("api-key=1,authorization=Bearer x"),
            "api-key=***,authorization=***"
        );
    }

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
