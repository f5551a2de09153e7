//! One escaping function per kind of output, for the values a trace holds (scenario names, task
//! ids, span names: anything a producer wrote):
//!
//! - [`terminal`] (and [`terminal_line`] for what must stay one line): C0 controls but newline and
//!   tab, DEL, C1 controls and the line and paragraph separators shown as `\u{..}`, so no value
//!   moves the cursor, sets a window title, clears the screen or forges a line;
//! - [`xml`] (and [`xml_chars`] for a writer that escapes `<`, `&` and quotes itself): characters
//!   XML 1.0 cannot hold (C0 controls but tab and line ends, U+FFFE, U+FFFF) replaced by U+FFFD;
//! - [`markdown`] (and [`fence`] for a code block): punctuation that Markdown or HTML reads
//!   backslash-escaped, line ends and controls shown as [`terminal_line`] shows them.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether a terminal may be sent `c` as it is (newline and tab aside).
fn harmless(c: char) -> bool {
    let u = c as u32;
    !(u < 0x20 || (0x7f..=0x9f).contains(&u) || c == '\u{2028}' || c == '\u{2029}')
}

fn terminal_with(text: &str, keep_newline: bool) -> Cow<'_, str> {
    let keep = |c: char| harmless(c) || c == '\t' || (keep_newline && c == '\n');
    if text.chars().all(keep) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if keep(c) {
            out.push(c);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

/// `text` safe to print on a terminal: every control character but newline and tab shown as
/// `\u{1b}` and the like.
pub fn terminal(text: &str) -> Cow<'_, str> {
    terminal_with(text, true)
}

/// [`terminal`], with a newline shown as `\u{a}` too: for a value printed inside one line.
pub fn terminal_line(text: &str) -> Cow<'_, str> {
    terminal_with(text, false)
}

/// Whether XML 1.0 can hold `c`.
fn xml_char(c: char) -> bool {
    let u = c as u32;
    (u >= 0x20 || matches!(c, '\t' | '\n' | '\r')) && !matches!(u, 0xfffe | 0xffff)
}

/// `text` with every character XML 1.0 cannot hold replaced by U+FFFD, for a writer that escapes
/// XML's special characters itself (an SVG backend).
pub fn xml_chars(text: &str) -> Cow<'_, str> {
    if text.chars().all(xml_char) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| if xml_char(c) { c } else { '\u{fffd}' })
            .collect(),
    )
}

/// `text` as XML character data or an attribute value: the five special characters escaped,
/// and [`xml_chars`]'s replacements.
pub fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in xml_chars(text).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// The characters Markdown (or the HTML it may hold) can read as markup inside a line: emphasis,
/// code, links and images, HTML tags and entities, table cells, headings, strikethrough.
const MARKUP: &str = "\\`*_[]<>&|#!~";

/// `text` as Markdown text that reads as written: every character that could start markup
/// backslash-escaped (no emphasis, link, heading, table cell or HTML tag can start in it),
/// controls and line ends shown as [`terminal_line`] shows them.
pub fn markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in terminal_line(text).chars() {
        if MARKUP.contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The fence for a Markdown code block holding `content`: three backticks, or one more than the
/// longest run of backticks in it, so the content cannot close the block.
pub fn fence(content: &str) -> String {
    let longest = content.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminal_gets_no_escape_sequence_nor_a_forged_line() {
        let hostile = "\u{1b}]0;owned\u{7}\u{1b}[2J\nFAKE: verdict: valid\u{85}\u{2028}\u{7f}\tok";
        let line = terminal_line(hostile);
        assert_eq!(
            line,
            "\\u{1b}]0;owned\\u{7}\\u{1b}[2J\\u{a}FAKE: verdict: valid\\u{85}\\u{2028}\\u{7f}\tok"
        );
        assert!(terminal("a\nb").contains('\n'));
        assert!(matches!(terminal_line("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn xml_holds_no_character_it_cannot_parse() {
        assert_eq!(
            xml("a<b & \"c\" 'd'>\u{1}\u{fffe}\u{ffff}\n"),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;\u{fffd}\u{fffd}\u{fffd}\n"
        );
        assert_eq!(xml_chars("<\u{1b}>"), "<\u{fffd}>");
    }

    #[test]
    fn markdown_reads_as_written() {
        assert_eq!(
            markdown("**x**|<b>\n# h-1.2"),
            "\\*\\*x\\*\\*\\|\\<b\\>\\\\u{a}\\# h-1.2"
        );
        assert_eq!(fence("a ``` b"), "````");
        assert_eq!(fence("plain"), "```");
    }
}
