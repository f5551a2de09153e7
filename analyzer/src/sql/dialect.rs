//! The few things the SQL engines spell differently: reading an integer or a boolean field of the
//! `detail` JSON text, the text type for casts, the value on a group's first row, whether a
//! common table expression is stored, and reading a path inside a `SELECT`.
//!
//! DuckDB reads `detail` with its JSON functions. DataFusion has no JSON functions without an
//! extension, and Spark's `get_json_object` cannot tell the string `"true"` from the boolean
//! `true`; both read a top-level field with a regular expression over the text instead. Every
//! dialect reads a field as the contract's lenient reader does: an integer is a JSON integer or a
//! string holding a decimal integer; a boolean is a JSON `true` or `false`; anything else is null.

use std::fmt;

use outbox_trace::detail::DetailKey;

/// An SQL engine the invariants can be printed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Dialect {
    /// DuckDB (1.x and later).
    Duckdb,
    /// Apache DataFusion (the `datafusion` Python package, `datafusion-cli`).
    Datafusion,
    /// Spark SQL (3.4 and later).
    Spark,
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dialect::Duckdb => "duckdb",
            Dialect::Datafusion => "datafusion",
            Dialect::Spark => "spark",
        })
    }
}

/// JSON whitespace, without backslashes (Spark's string literals treat them as escapes).
pub(super) const WS: &str = "[ \t\n\r]*";

/// Why a dialect cannot print the statement asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DialectError {
    /// The dialect cannot read a path inside a `SELECT`.
    #[error(
        "--source is not available for {0}: it cannot read a path inside a SELECT; \
         register the trace as a table named `trace` and omit --source"
    )]
    NoPathInSelect(Dialect),
    /// The path cannot be written as an SQL string literal of this dialect.
    #[error("--source {0:?}: the path contains a character the {1} string literal cannot hold")]
    BadPath(String, Dialect),
}

impl Dialect {
    /// The text type for `CAST(x AS ...)`.
    pub fn text(self) -> &'static str {
        match self {
            Dialect::Spark => "STRING",
            Dialect::Duckdb | Dialect::Datafusion => "VARCHAR",
        }
    }

    /// What to write before a common table expression's `(` so that each reference reads its
    /// source again instead of a stored copy (DuckDB stores one read more than once).
    pub fn inline(self) -> &'static str {
        match self {
            Dialect::Duckdb => "NOT MATERIALIZED ",
            Dialect::Datafusion | Dialect::Spark => "",
        }
    }

    /// The column `name` quoted, for a name the engines also read as a keyword (`partition`).
    pub fn quote(self, name: &str) -> String {
        match self {
            Dialect::Spark => format!("`{name}`"),
            Dialect::Duckdb | Dialect::Datafusion => format!("\"{name}\""),
        }
    }

    /// `x` as text.
    pub fn to_text(self, x: &str) -> String {
        format!("CAST({x} AS {})", self.text())
    }

    /// The table expression that reads `path` (a file, a glob or a partitioned directory), or
    /// why this dialect cannot.
    pub fn read(self, path: &str) -> Result<String, DialectError> {
        match self {
            Dialect::Datafusion => Err(DialectError::NoPathInSelect(self)),
            Dialect::Duckdb => {
                if path.contains('\'') {
                    return Err(DialectError::BadPath(path.to_string(), self));
                }
                // A directory is read at any depth; the path's `key=value` parts fill the
                // partition columns a file lacks, as text.
                let glob = if is_file_or_glob(path) {
                    path.to_string()
                } else {
                    format!("{}/**/*.parquet", path.trim_end_matches('/'))
                };
                Ok(format!(
                    "read_parquet('{glob}', hive_partitioning = true, hive_types_autocast = false, union_by_name = true)"
                ))
            }
            Dialect::Spark => {
                if path.contains('`') {
                    return Err(DialectError::BadPath(path.to_string(), self));
                }
                Ok(format!("parquet.`{path}`"))
            }
        }
    }

    /// The integer value of the top-level key `key` of the JSON object in column `col`, read
    /// leniently (a JSON integer or a string holding a decimal integer), else null. `key` comes
    /// from `outbox_trace::detail_key!`, so it names a field the contract's details have.
    pub fn json_int(self, col: &str, key: DetailKey) -> String {
        match self {
            Dialect::Duckdb => {
                let path = format!("'$.{key}'");
                let j = duck_object(col);
                let text = format!("trim(json_extract_string({j}, {path}))");
                format!(
                    "(CASE WHEN json_type({j}, {path}) IN ('BIGINT', 'UBIGINT') \
                     THEN TRY_CAST(json_extract_string({j}, {path}) AS BIGINT) \
                     WHEN json_type({j}, {path}) = 'VARCHAR' AND regexp_matches({text}, '^[+-]?[0-9]+$') \
                     THEN TRY_CAST({text} AS BIGINT) END)"
                )
            }
            Dialect::Datafusion | Dialect::Spark => {
                let pattern =
                    format!("\"{key}\"{WS}:{WS}(-?[0-9]+|\"{WS}[+-]?[0-9]+{WS}\"){WS}[,}}]");
                let group = self.regex_group(col, &pattern);
                format!("TRY_CAST(trim(replace({group}, '\"', '')) AS BIGINT)")
            }
        }
    }

    /// The string value of the top-level key `key` of the JSON object in column `col` (as
    /// written, escapes kept), else null.
    pub fn json_text(self, col: &str, key: DetailKey) -> String {
        match self {
            Dialect::Duckdb => {
                let path = format!("'$.{key}'");
                let j = duck_object(col);
                format!(
                    "(CASE WHEN json_type({j}, {path}) = 'VARCHAR' \
                     THEN json_extract_string({j}, {path}) END)"
                )
            }
            Dialect::Datafusion | Dialect::Spark => {
                self.regex_group(col, &format!("\"{key}\"{WS}:{WS}\"([^\"]*)\""))
            }
        }
    }

    /// The integer under the key `name` (an expression: a key given by a column) of the JSON
    /// object under the key `key` of the JSON object in `col`, read leniently as
    /// [`Dialect::json_int`] reads one (`{"counter": {"apple": 15}}`: `key` `counter`, `name`
    /// the text `apple`); null when either is absent or not of that form. The same text search
    /// in every dialect: the object found, then the name inside it.
    pub fn json_keyed_int(self, col: &str, key: DetailKey, name: &str) -> String {
        let body = self.regex_group(col, &format!("\"{key}\"{WS}:{WS}[{{]([^{{}}]*)[}}]"));
        let quoted = format!("'\"' || {name} || '\"'");
        let rest = format!(
            "(CASE WHEN instr({body}, {quoted}) > 0 \
             THEN substr({body}, instr({body}, {quoted}) + length({name}) + 2) END)"
        );
        let value = self.regex_group(
            &rest,
            &format!("^{WS}:{WS}(-?[0-9]+|\"{WS}[+-]?[0-9]+{WS}\"){WS}(,|$)"),
        );
        format!("TRY_CAST(trim(replace({value}, '\"', '')) AS BIGINT)")
    }

    /// Whether the list under the key `key` of the JSON object in `col` holds the string
    /// `value` (a kind's name: no quote or backslash in it); false when there is no such list.
    pub fn json_list_has(self, col: &str, key: DetailKey, value: &str) -> String {
        match self {
            Dialect::Duckdb => {
                let j = duck_object(col);
                format!(
                    "coalesce(CASE WHEN json_type({j}, '$.{key}') = 'ARRAY' \
                     THEN list_contains(json_extract_string({j}, '$.{key}[*]'), '{value}') END, false)"
                )
            }
            Dialect::Datafusion | Dialect::Spark => {
                let list =
                    self.regex_group(col, &format!("\"{key}\"{WS}:{WS}\\[([^\\[\\]{{}}]*)\\]"));
                format!("coalesce(instr({list}, '\"{value}\"') > 0, false)")
            }
        }
    }

    /// The boolean value of the top-level key `key` of the JSON object in column `col` when it
    /// is a JSON `true` or `false`, else null. `key` comes from `outbox_trace::detail_key!`.
    pub fn json_bool(self, col: &str, key: DetailKey) -> String {
        match self {
            Dialect::Duckdb => {
                let path = format!("'$.{key}'");
                let j = duck_object(col);
                format!(
                    "(CASE WHEN json_type({j}, {path}) = 'BOOLEAN' \
                     THEN json_extract_string({j}, {path}) = 'true' END)"
                )
            }
            Dialect::Datafusion | Dialect::Spark => {
                let pattern = format!("\"{key}\"{WS}:{WS}(true|false){WS}[,}}]");
                format!("({} = 'true')", self.regex_group(col, &pattern))
            }
        }
    }

    /// The aggregate giving `x` on the row with the least `key` among those whose `key` is not
    /// null (`x` must not be null on them, and the keys must differ); null without such a row.
    pub fn first_by(self, x: &str, key: &str) -> String {
        match self {
            Dialect::Duckdb => format!("arg_min({x}, {key})"),
            Dialect::Datafusion => format!("first_value({x} ORDER BY {key})"),
            Dialect::Spark => format!("min_by({x}, {key})"),
        }
    }

    /// `text` with every match of `pattern` replaced by `with` (a literal without backslashes).
    pub fn replace_all(self, text: &str, pattern: &str, with: &str) -> String {
        match self {
            Dialect::Spark => format!(
                "regexp_replace({text}, '{}', '{with}')",
                pattern.replace('\\', "\\\\")
            ),
            Dialect::Duckdb | Dialect::Datafusion => {
                format!("regexp_replace({text}, '{pattern}', '{with}', 'g')")
            }
        }
    }

    /// The set-returning expression giving one row per piece of `text` split at `delim` (a
    /// literal without regular-expression characters), for a `SELECT` list.
    pub fn split_rows(self, text: &str, delim: &str) -> String {
        match self {
            Dialect::Duckdb => format!("unnest(string_split({text}, '{delim}'))"),
            Dialect::Datafusion => format!("unnest(string_to_array({text}, '{delim}'))"),
            Dialect::Spark => format!("explode(split({text}, '{delim}'))"),
        }
    }

    /// The first capture group of `pattern` in `col`, null when it does not match.
    pub fn regex_group(self, col: &str, pattern: &str) -> String {
        match self {
            Dialect::Datafusion => format!("regexp_match({col}, '{pattern}')[1]"),
            // Spark's string literals read a backslash as an escape: doubled, it reaches the
            // regular expression.
            Dialect::Spark => format!(
                "nullif(regexp_extract({col}, '{}', 1), '')",
                pattern.replace('\\', "\\\\")
            ),
            Dialect::Duckdb => format!("nullif(regexp_extract({col}, '{pattern}', 1), '')"),
        }
    }
}

/// DuckDB: `col` when it holds a JSON object, else null (its JSON functions fail on malformed
/// text, and a `CASE` does not keep them from seeing it).
fn duck_object(col: &str) -> String {
    format!(
        "(CASE WHEN json_valid({col}) AND json_type(CASE WHEN json_valid({col}) THEN {col} END) = 'OBJECT' \
         THEN {col} END)"
    )
}

/// Whether a source path names files (a `.parquet` file or a glob) rather than a directory.
fn is_file_or_glob(path: &str) -> bool {
    path.ends_with(".parquet") || path.contains(['*', '?', '['])
}
