//! A benchmark table as data (column names and rows of cells, in order) and as Markdown.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Columns and rows, in the order they are shown.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Table {
    pub columns: Vec<String>,
    /// One cell per column in each row.
    pub rows: Vec<Vec<Value>>,
}

impl Table {
    /// An empty table with these columns.
    pub fn new<S: Into<String>>(columns: impl IntoIterator<Item = S>) -> Self {
        Table {
            columns: columns.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row.
    pub fn push(&mut self, row: Vec<Value>) {
        self.rows.push(row);
    }

    /// The table in Markdown.
    pub fn markdown(&self) -> String {
        let mut out = format!("| {} |\n", self.columns.join(" | "));
        out += &format!("|{}\n", "---|".repeat(self.columns.len()));
        for row in &self.rows {
            let cells: Vec<String> = row.iter().map(cell).collect();
            out += &format!("| {} |\n", cells.join(" | "));
        }
        out
    }
}

/// One cell: a string as it is, a map as `key value` pairs, anything else as JSON.
pub fn cell(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    }
}
