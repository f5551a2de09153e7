//! A simple query's text split into its statements, on each `;` outside quotes (`'...'`,
//! `E'...'` with its backslash escapes, `"..."`, `$tag$...$tag$`) and comments (`--` to the end
//! of the line, `/* ... */` nested). Each statement is trimmed; empty ones are left out.
//!
//! A `;` this does not see as quoted (a `BEGIN ATOMIC ... END` function body) splits where the
//! server does not: the statements of such a query then read their text one off.

/// The statements of `sql`, in order.
pub(super) fn statements(sql: &str) -> Vec<String> {
    let bytes = sql.as_bytes();
    let mut parts = Vec::new();
    let mut start = 0;
    let mut at = 0;
    while at < bytes.len() {
        at = match bytes[at] {
            b';' => {
                push_trimmed(&mut parts, &sql[start..at]);
                start = at + 1;
                at + 1
            }
            b'\'' => {
                let escapes = at > 0 && bytes[at - 1].eq_ignore_ascii_case(&b'e');
                past_quote(bytes, at, b'\'', escapes)
            }
            b'"' => past_quote(bytes, at, b'"', false),
            b'-' if bytes.get(at + 1) == Some(&b'-') => past_line(bytes, at),
            b'/' if bytes.get(at + 1) == Some(&b'*') => past_block_comment(bytes, at),
            b'$' => past_dollar_quote(bytes, at),
            _ => at + 1,
        };
    }
    push_trimmed(&mut parts, &sql[start.min(sql.len())..]);
    parts
}

fn push_trimmed(parts: &mut Vec<String>, part: &str) {
    let part = part.trim();
    if !part.is_empty() {
        parts.push(part.to_string());
    }
}

/// Past the quote that opens at `at` (a doubled quote inside is one quote character).
fn past_quote(bytes: &[u8], at: usize, quote: u8, escapes: bool) -> usize {
    let mut i = at + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if escapes => i += 2,
            b if b == quote => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Past the end of the line at `at`.
fn past_line(bytes: &[u8], at: usize) -> usize {
    bytes[at..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |n| at + n + 1)
}

/// Past the (nested) block comment that opens at `at`.
fn past_block_comment(bytes: &[u8], at: usize) -> usize {
    let mut depth = 0;
    let mut i = at;
    while i + 1 < bytes.len() {
        match (bytes[i], bytes[i + 1]) {
            (b'/', b'*') => {
                depth += 1;
                i += 2;
            }
            (b'*', b'/') => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Past the dollar quote that opens at `at` (`$$` or `$tag$`), or one byte on when `$` opens
/// none (a parameter such as `$1`).
fn past_dollar_quote(bytes: &[u8], at: usize) -> usize {
    let tag_len = bytes[at + 1..]
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || b == b'_'))
        .filter(|&n| bytes[at + 1 + n] == b'$')
        .filter(|&n| n == 0 || !bytes[at + 1].is_ascii_digit());
    let Some(tag_len) = tag_len else {
        return at + 1;
    };
    let tag = &bytes[at..at + tag_len + 2];
    let body = at + tag.len();
    bytes[body..]
        .windows(tag.len())
        .position(|w| w == tag)
        .map_or(bytes.len(), |n| body + n + tag.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_split_on_semicolons_outside_quotes_and_comments() {
        assert_eq!(statements("BEGIN"), ["BEGIN"]);
        assert_eq!(
            statements(" BEGIN; INSERT INTO t VALUES (1);; "),
            ["BEGIN", "INSERT INTO t VALUES (1)"]
        );
        assert_eq!(
            statements("SELECT 'a;b', \"c;d\"; SELECT E'\\';'; SELECT 1 -- x;y\n; SELECT /* /* ; */ ; */ 2"),
            [
                "SELECT 'a;b', \"c;d\"",
                "SELECT E'\\';'",
                "SELECT 1 -- x;y",
                "SELECT /* /* ; */ ; */ 2"
            ]
        );
        assert_eq!(
            statements("DO $x$ BEGIN; END $x$; SELECT $$;$$; SELECT $1"),
            ["DO $x$ BEGIN; END $x$", "SELECT $$;$$", "SELECT $1"]
        );
        assert!(statements(" ; ").is_empty());
        assert_eq!(statements("SELECT 'open;"), ["SELECT 'open;"]);
    }
}
