//! Placeholders in a system file's text: `${name}` is replaced by a value the recorder knows
//! (`${port}`, `${dir}`, `${services.redis.port}`, `${task}`, ...); any other text, braces
//! included, is literal. A template is parsed once, when the file is read, so an unknown name is
//! a configuration error before anything starts.

use std::collections::BTreeMap;
use std::fmt;

/// A piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Name(String),
}

/// A text with `${name}` placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

/// The values a template may name, by name.
pub type Values = BTreeMap<String, String>;

impl Template {
    /// Parses `text`. `${` followed by a name of letters, digits, `_`, `-` and `.` and a `}` is a
    /// placeholder; everything else is literal.
    pub fn parse(text: &str) -> Template {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(at) = rest.find("${") {
            let after = &rest[at + 2..];
            let name_len = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
                .unwrap_or(after.len());
            if name_len > 0 && after[name_len..].starts_with('}') {
                literal.push_str(&rest[..at]);
                if !literal.is_empty() {
                    parts.push(Part::Text(std::mem::take(&mut literal)));
                }
                parts.push(Part::Name(after[..name_len].to_string()));
                rest = &after[name_len + 1..];
            } else {
                literal.push_str(&rest[..at + 2]);
                rest = after;
            }
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        Template { parts }
    }

    /// Whether the template is only whitespace (no placeholder, no other text).
    pub fn is_blank(&self) -> bool {
        self.parts
            .iter()
            .all(|p| matches!(p, Part::Text(t) if t.trim().is_empty()))
    }

    /// Whether its literal text holds a NUL byte (no process can be given one).
    pub fn has_nul(&self) -> bool {
        self.parts
            .iter()
            .any(|p| matches!(p, Part::Text(t) if t.contains('\0')))
    }

    /// The names the template uses, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Name(n) => Some(n.as_str()),
            Part::Text(_) => None,
        })
    }

    /// The first name not accepted by `known`, if any.
    pub fn unknown(&self, known: impl Fn(&str) -> bool) -> Option<&str> {
        self.names().find(|n| !known(n))
    }

    /// The text with every placeholder replaced. A name without a value (which validation rules
    /// out) is left as written.
    pub fn expand(&self, values: &Values) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Name(n) => match values.get(n) {
                    Some(v) => out.push_str(v),
                    None => {
                        out.push_str("${");
                        out.push_str(n);
                        out.push('}');
                    }
                },
            }
        }
        out
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for part in &self.parts {
            match part {
                Part::Text(t) => f.write_str(t)?,
                Part::Name(n) => write!(f, "${{{n}}}")?,
            }
        }
        Ok(())
    }
}

impl<'de> serde::Deserialize<'de> for Template {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(|s| Template::parse(&s))
    }
}

impl serde::Serialize for Template {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_replaced_and_other_text_is_literal() {
        let t = Template::parse(
            r#"{"id": "${task}", "n": ${amount}, "raw": "${not closed", "$": "${}"}"#,
        );
        assert_eq!(t.names().collect::<Vec<_>>(), ["task", "amount"]);
        let values = Values::from([
            ("task".to_string(), "t-0001".to_string()),
            ("amount".to_string(), "3".to_string()),
        ]);
        assert_eq!(
            t.expand(&values),
            r#"{"id": "t-0001", "n": 3, "raw": "${not closed", "$": "${}"}"#
        );
        assert_eq!(t.to_string(), Template::parse(&t.to_string()).to_string());
    }

    #[test]
    fn an_unknown_name_is_found() {
        let t = Template::parse("redis://127.0.0.1:${services.redis.port}/${db}");
        assert_eq!(t.unknown(|n| n == "services.redis.port"), Some("db"));
        assert_eq!(t.unknown(|_| true), None);
    }
}
