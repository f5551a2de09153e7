//! Just enough of SQL to map a statement to a step: which table it writes or reads (`insert
//! into T`, `update T`, `delete from T`, `select ... from T`), and which bound parameter each
//! column was given (an `INSERT`'s column list against its `VALUES ($1, $2, ...)`, and
//! `column = $N` anywhere: a `SET`, a `WHERE`).
//!
//! It reads words, not grammar: identifiers (quoted or not, a schema prefix dropped) are
//! compared in lower case; string literals and comments are skipped. A statement it cannot place
//! (a `WITH` query, a function call alone) has no table, and no rule matches it.

/// What a statement does to its table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// `INSERT INTO`.
    Insert,
    /// `UPDATE`.
    Update,
    /// `DELETE FROM`.
    Delete,
    /// `SELECT ... FROM`.
    Select,
}

impl Verb {
    /// The words a rule writes for it.
    pub fn words(self) -> &'static str {
        match self {
            Verb::Insert => "insert into",
            Verb::Update => "update",
            Verb::Delete => "delete from",
            Verb::Select => "select from",
        }
    }
}

/// A statement's table and what it does to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// What it does.
    pub verb: Verb,
    /// The table, lower case, without a schema.
    pub table: String,
}

/// One word of SQL.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// An identifier or keyword, lower case (a quoted one as written, lower case).
    Word(String),
    /// `$N`.
    Param(usize),
    /// One punctuation character.
    Punct(char),
    /// A literal (string or number): its value does not matter here.
    Literal,
}

/// The words of `sql`.
fn tokens(sql: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            '-' if chars.peek() == Some(&'-') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '\'' => {
                // A string: '' inside is a quote.
                while let Some(c) = chars.next() {
                    if c == '\'' && chars.peek() != Some(&'\'') {
                        break;
                    }
                    if c == '\'' {
                        chars.next();
                    }
                }
                out.push(Token::Literal);
            }
            '"' => {
                let word: String = chars.by_ref().take_while(|&c| c != '"').collect();
                out.push(Token::Word(word.to_lowercase()));
            }
            '$' if chars.peek().is_some_and(char::is_ascii_digit) => {
                let mut n = 0usize;
                while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                    n = n.saturating_mul(10).saturating_add(d as usize);
                    chars.next();
                }
                out.push(Token::Param(n));
            }
            c if c.is_ascii_digit() => {
                while chars
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '.')
                {
                    chars.next();
                }
                out.push(Token::Literal);
            }
            c if c.is_alphanumeric() || c == '_' => {
                let mut word = c.to_lowercase().to_string();
                while let Some(&c) = chars.peek() {
                    if !(c.is_alphanumeric() || c == '_' || c == '$') {
                        break;
                    }
                    word.extend(c.to_lowercase());
                    chars.next();
                }
                out.push(Token::Word(word));
            }
            c => out.push(Token::Punct(c)),
        }
    }
    out
}

/// A statement read for mapping: its target and its column-to-parameter pairs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shape {
    /// Its table, where it has one this reader places.
    pub target: Option<Target>,
    /// `(column, N)`: the column was given `$N`.
    pub bound: Vec<(String, usize)>,
}

impl Shape {
    /// The parameter (1-based) the column `column` was given, if one.
    pub fn param_of(&self, column: &str) -> Option<usize> {
        self.bound
            .iter()
            .find(|(c, _)| c == column)
            .map(|(_, n)| *n)
    }
}

/// Reads `sql`.
pub fn shape(sql: &str) -> Shape {
    let tokens = tokens(sql);
    let target = target(&tokens);
    let mut bound = Vec::new();
    if target.as_ref().is_some_and(|t| t.verb == Verb::Insert) {
        bound.extend(insert_columns(&tokens));
    }
    for w in tokens.windows(3) {
        if let [Token::Word(column), Token::Punct('='), Token::Param(n)] = w {
            bound.push((column.clone(), *n));
        }
    }
    Shape { target, bound }
}

/// The table after `at` (a schema prefix dropped).
fn table_at(tokens: &[Token], at: usize) -> Option<String> {
    let Token::Word(first) = tokens.get(at)? else {
        return None;
    };
    match (tokens.get(at + 1), tokens.get(at + 2)) {
        (Some(Token::Punct('.')), Some(Token::Word(table))) => Some(table.clone()),
        _ => Some(first.clone()),
    }
}

fn is_word(token: Option<&Token>, word: &str) -> bool {
    matches!(token, Some(Token::Word(w)) if w == word)
}

/// What the statement does to which table.
fn target(tokens: &[Token]) -> Option<Target> {
    let first = |word| is_word(tokens.first(), word);
    let (verb, at) = if first("insert") && is_word(tokens.get(1), "into") {
        (Verb::Insert, 2)
    } else if first("update") {
        let only = usize::from(is_word(tokens.get(1), "only"));
        (Verb::Update, 1 + only)
    } else if first("delete") && is_word(tokens.get(1), "from") {
        (Verb::Delete, 2)
    } else if first("select") {
        let from = tokens
            .iter()
            .position(|t| matches!(t, Token::Word(w) if w == "from"))?;
        (Verb::Select, from + 1)
    } else {
        return None;
    };
    Some(Target {
        verb,
        table: table_at(tokens, at)?,
    })
}

/// An `INSERT`'s columns against its first `VALUES` row, where a value is a parameter (maybe
/// with a cast).
fn insert_columns(tokens: &[Token]) -> Vec<(String, usize)> {
    let Some(open) = tokens.iter().position(|t| *t == Token::Punct('(')) else {
        return Vec::new();
    };
    let columns: Vec<String> = tokens[open + 1..]
        .iter()
        .take_while(|t| **t != Token::Punct(')'))
        .filter_map(|t| match t {
            Token::Word(w) => Some(w.clone()),
            _ => None,
        })
        .collect();
    let Some(values) = tokens
        .iter()
        .position(|t| matches!(t, Token::Word(w) if w == "values"))
    else {
        return Vec::new();
    };
    let mut depth = 0usize;
    let mut slot = 0usize;
    let mut pairs = Vec::new();
    for t in &tokens[values + 1..] {
        match t {
            Token::Punct('(') => depth += 1,
            Token::Punct(')') if depth <= 1 => break,
            Token::Punct(')') => depth -= 1,
            Token::Punct(',') if depth == 1 => slot += 1,
            Token::Param(n) if depth == 1 => {
                if let Some(column) = columns.get(slot) {
                    if !pairs.iter().any(|(c, _): &(String, usize)| c == column) {
                        pairs.push((column.clone(), *n));
                    }
                }
            }
            _ => {}
        }
    }
    pairs
}

/// A rule's `commit` text (`insert into outbox`), read as a target; `None` when it names none.
pub fn rule_target(text: &str) -> Option<Target> {
    let tokens = tokens(text);
    let target = target(&tokens)?;
    // `select from T` names a table without columns.
    let words = match target.verb {
        Verb::Select => 3,
        Verb::Update => 2,
        Verb::Insert | Verb::Delete => 3,
    };
    let dotted = matches!(tokens.get(words), Some(Token::Punct('.')));
    let len = if dotted { words + 2 } else { words };
    (tokens.len() == len).then_some(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(verb: Verb, table: &str) -> Option<Target> {
        Some(Target {
            verb,
            table: table.into(),
        })
    }

    #[test]
    fn a_statement_names_its_table_and_what_each_column_was_given() {
        let s = shape(
            "INSERT INTO public.outbox (event_id, task_id, amount)\n VALUES ($1, $2::text, $3)",
        );
        assert_eq!(s.target, t(Verb::Insert, "outbox"));
        assert_eq!(s.param_of("task_id"), Some(2));
        assert_eq!(s.param_of("amount"), Some(3));
        let s = shape("UPDATE outbox SET published = true WHERE event_id = $1");
        assert_eq!(s.target, t(Verb::Update, "outbox"));
        assert_eq!(s.param_of("event_id"), Some(1));
        assert_eq!(s.param_of("published"), None);
        let s = shape("SELECT store_rev, counter FROM \"Processed\" WHERE event_id=$1");
        assert_eq!(s.target, t(Verb::Select, "processed"));
        assert_eq!(s.param_of("event_id"), Some(1));
        let s = shape(
            "INSERT INTO counters (counter_key, value) VALUES ($1, $2) \
             ON CONFLICT (counter_key) DO UPDATE SET value = counters.value + EXCLUDED.value RETURNING value",
        );
        assert_eq!(s.target, t(Verb::Insert, "counters"));
        assert_eq!(s.param_of("value"), Some(2));
        assert_eq!(s.param_of("counter_key"), Some(1));
    }

    #[test]
    fn literals_comments_and_unplaced_statements() {
        let s = shape("insert into t (a, b) values ('x, $9', $1) -- c = $4");
        assert_eq!(s.param_of("b"), Some(1));
        assert_eq!(s.param_of("a"), None);
        assert_eq!(s.param_of("c"), None);
        assert_eq!(shape("SELECT nextval('store_rev') AS n").target, None);
        assert_eq!(shape("BEGIN").target, None);
        assert_eq!(
            shape("WITH x AS (SELECT 1) INSERT INTO t VALUES (1)").target,
            None
        );
    }

    #[test]
    fn a_rule_names_one_statement_or_none() {
        assert_eq!(rule_target("insert into outbox"), t(Verb::Insert, "outbox"));
        assert_eq!(
            rule_target("UPDATE public.outbox"),
            t(Verb::Update, "outbox")
        );
        assert_eq!(
            rule_target("delete from processed"),
            t(Verb::Delete, "processed")
        );
        assert_eq!(
            rule_target("select from processed"),
            t(Verb::Select, "processed")
        );
        assert_eq!(rule_target("insert outbox"), None);
        assert_eq!(rule_target("insert into outbox (a)"), None);
        assert_eq!(rule_target("commit"), None);
    }
}
