//! Where a column of a wire step comes from: a column or a bound parameter of a statement of the
//! committed transaction (`outbox.event_id`, `outbox.$1`), or a NATS message's JSON payload
//! (`payload:/event_id`) or header (`header:Nats-Msg-Id`).

use super::sql::{shape, Shape};
use crate::wire::heard::{Message, Statement};

/// One reference, as checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ref {
    /// `TABLE.COLUMN`: the column's value in a statement on the table: the row it returned,
    /// else the parameter it was given.
    Column { table: String, column: String },
    /// `TABLE.$N`: the N-th parameter of a statement on the table.
    Param { table: String, n: usize },
    /// `payload:/POINTER`: a JSON pointer into the message's payload.
    Payload(String),
    /// `header:NAME`: a message header (the first of that name, case-insensitive).
    Header(String),
}

/// Which protocol a reference belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// A statement's.
    Sql,
    /// A message's.
    Message,
}

impl Ref {
    /// Reads a reference as written; why not, in words.
    pub fn parse(text: &str) -> Result<Ref, String> {
        if let Some(pointer) = text.strip_prefix("payload:") {
            if !(pointer.is_empty() || pointer.starts_with('/')) {
                return Err(format!(
                    "\"{text}\": a payload reference is a JSON pointer, as payload:/event_id"
                ));
            }
            return Ok(Ref::Payload(pointer.to_string()));
        }
        if let Some(name) = text.strip_prefix("header:") {
            if name.trim().is_empty() || name.contains(char::is_whitespace) {
                return Err(format!(
                    "\"{text}\": a header reference names a header, as header:Nats-Msg-Id"
                ));
            }
            return Ok(Ref::Header(name.to_string()));
        }
        let bad = || {
            format!(
                "\"{text}\": expected TABLE.COLUMN or TABLE.$N (a statement's), or payload:/POINTER or header:NAME (a message's)"
            )
        };
        let (table, column) = text.rsplit_once('.').ok_or_else(bad)?;
        let word = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_alphanumeric() || c == '_');
        let table = table.rsplit('.').next().unwrap_or(table).to_lowercase();
        if !word(&table) {
            return Err(bad());
        }
        if let Some(n) = column.strip_prefix('$') {
            let n: usize = n.parse().map_err(|_| bad())?;
            if n == 0 {
                return Err(bad());
            }
            return Ok(Ref::Param { table, n });
        }
        if !word(column) {
            return Err(bad());
        }
        Ok(Ref::Column {
            table,
            column: column.to_lowercase(),
        })
    }

    /// The protocol it reads.
    pub fn side(&self) -> Side {
        match self {
            Ref::Column { .. } | Ref::Param { .. } => Side::Sql,
            Ref::Payload(_) | Ref::Header(_) => Side::Message,
        }
    }

    /// Its value in a committed transaction: the statement the rule matched (`matched`, an
    /// index into `statements`) first, then the first other statement on its table that has
    /// it.
    pub fn in_statements(
        &self,
        statements: &[(Statement, Shape)],
        matched: usize,
    ) -> Option<String> {
        let first = statements.get(matched).into_iter();
        let rest = statements
            .iter()
            .enumerate()
            .filter(move |(i, _)| *i != matched)
            .map(|(_, s)| s);
        first.chain(rest).find_map(|s| self.in_one(s))
    }

    /// Its value in one statement, if the statement is on its table and has it.
    fn in_one(&self, (statement, shape): &(Statement, Shape)) -> Option<String> {
        let on = |table: &str| shape.target.as_ref().is_some_and(|t| t.table == table);
        match self {
            Ref::Column { table, column } if on(table) => column_of(statement, shape, column),
            Ref::Param { table, n } if on(table) => statement.params.get(n - 1).cloned()?,
            _ => None,
        }
    }

    /// Its value in a message.
    pub fn in_message(&self, message: &Message) -> Option<String> {
        match self {
            Ref::Payload(pointer) => {
                let json: serde_json::Value = serde_json::from_slice(&message.payload).ok()?;
                match json.pointer(pointer)? {
                    serde_json::Value::String(s) => Some(s.clone()),
                    serde_json::Value::Number(n) => Some(n.to_string()),
                    serde_json::Value::Bool(b) => Some(b.to_string()),
                    _ => None,
                }
            }
            Ref::Header(name) => message
                .headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone()),
            Ref::Column { .. } | Ref::Param { .. } => None,
        }
    }
}

/// A column's value in one statement: the row it returned, else the parameter it was given.
fn column_of(statement: &Statement, shape: &Shape, column: &str) -> Option<String> {
    let returned = statement
        .columns
        .iter()
        .position(|c| c.eq_ignore_ascii_case(column));
    if let Some(at) = returned {
        if let Some(value) = statement.first_row.get(at) {
            return value.clone();
        }
    }
    let n = shape.param_of(column)?;
    statement.params.get(n - 1).cloned()?
}

/// Each statement with its shape read.
pub fn shaped(statements: &[Statement]) -> Vec<(Statement, Shape)> {
    statements
        .iter()
        .map(|s| (s.clone(), shape(&s.sql)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_read_as_written_or_say_why_not() {
        assert_eq!(
            Ref::parse("outbox.event_id"),
            Ok(Ref::Column {
                table: "outbox".into(),
                column: "event_id".into()
            })
        );
        assert_eq!(
            Ref::parse("public.Outbox.$2"),
            Ok(Ref::Param {
                table: "outbox".into(),
                n: 2
            })
        );
        assert_eq!(
            Ref::parse("payload:/order/id"),
            Ok(Ref::Payload("/order/id".into()))
        );
        assert_eq!(
            Ref::parse("header:Nats-Msg-Id"),
            Ok(Ref::Header("Nats-Msg-Id".into()))
        );
        for bad in [
            "event_id",
            "outbox.$0",
            "outbox.$x",
            "payload:event_id",
            "header:",
            "a b.c",
        ] {
            assert!(Ref::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_column_is_the_returned_row_before_the_bound_parameter() {
        let upsert = Statement {
            sql: "INSERT INTO counters (counter_key, value) VALUES ($1, $2) ON CONFLICT (counter_key) \
                  DO UPDATE SET value = counters.value + EXCLUDED.value RETURNING value"
                .into(),
            params: vec![Some("agg-1".into()), Some("3".into())],
            columns: vec!["value".into()],
            first_row: vec![Some("10".into())],
            tag: "INSERT 0 1".into(),
        };
        let lookup = Statement {
            sql: "SELECT value FROM counters WHERE counter_key = $1".into(),
            params: vec![Some("agg-9".into())],
            columns: vec!["value".into()],
            first_row: vec![Some("1".into())],
            tag: "SELECT 1".into(),
        };
        let statements = shaped(&[lookup, upsert]);
        let value = Ref::parse("counters.value").unwrap();
        assert_eq!(value.in_statements(&statements, 1), Some("10".into()));
        let key = Ref::parse("counters.counter_key").unwrap();
        assert_eq!(key.in_statements(&statements, 1), Some("agg-1".into()));
        let amount = Ref::parse("counters.$2").unwrap();
        assert_eq!(amount.in_statements(&statements, 1), Some("3".into()));
        // The matched statement first: the look-up's row, or past the end the first that has it.
        assert_eq!(value.in_statements(&statements, 0), Some("1".into()));
        assert_eq!(value.in_statements(&statements, 9), Some("1".into()));
        let missing = Ref::parse("results.amount").unwrap();
        assert_eq!(missing.in_statements(&statements, 1), None);
    }

    #[test]
    fn a_message_gives_its_payload_and_headers() {
        let m = Message {
            subject: "orders".into(),
            headers: vec![("Nats-Msg-Id".into(), "evt-1".into())],
            payload: br#"{"event_id": "evt-1", "amount": 3}"#.to_vec(),
        };
        assert_eq!(
            Ref::parse("payload:/event_id").unwrap().in_message(&m),
            Some("evt-1".into())
        );
        assert_eq!(
            Ref::parse("payload:/amount").unwrap().in_message(&m),
            Some("3".into())
        );
        assert_eq!(
            Ref::parse("header:nats-msg-id").unwrap().in_message(&m),
            Some("evt-1".into())
        );
        assert_eq!(Ref::parse("payload:/missing").unwrap().in_message(&m), None);
    }
}
