//! The `[steps]` table as serde reads it: per step kind, one rule or several
//! (`[steps.effect_committed]`, or `[[steps.duplicate_suppressed]]` for alternatives), each
//! naming the service whose traffic it reads, what on that traffic is the step, and where each
//! column comes from.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `[steps]`: by step kind, its rules.
pub type StepsSpec = BTreeMap<String, Rules>;

/// One rule for a kind, or several (any one matching makes the step).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Rules {
    /// `[steps.KIND]`.
    One(RuleSpec),
    /// `[[steps.KIND]]`.
    Many(Vec<RuleSpec>),
}

impl<'de> Deserialize<'de> for Rules {
    /// A table is one rule, an array of tables several; a rule's own error is kept.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match toml::Value::deserialize(d)? {
            toml::Value::Array(items) => items
                .into_iter()
                .map(|item| RuleSpec::deserialize(item).map_err(D::Error::custom))
                .collect::<Result<_, _>>()
                .map(Rules::Many),
            table @ toml::Value::Table(_) => RuleSpec::deserialize(table)
                .map(Rules::One)
                .map_err(D::Error::custom),
            _ => Err(D::Error::custom(
                "a step is a table ([steps.KIND]) or an array of tables ([[steps.KIND]])",
            )),
        }
    }
}

impl Rules {
    /// The rules, in the file's order.
    pub fn all(&self) -> &[RuleSpec] {
        match self {
            Rules::One(rule) => std::slice::from_ref(rule),
            Rules::Many(rules) => rules,
        }
    }
}

/// One rule, as written (a key it does not know is read as a column, and the check refuses
/// it).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct RuleSpec {
    /// The service (a `[services]` name) whose traffic the rule reads.
    pub on: String,
    /// PostgreSQL: the statement a committed transaction must hold, as `insert into TABLE`,
    /// `update TABLE`, `delete from TABLE` or `select from TABLE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// PostgreSQL: how many rows that statement must have changed or returned (default: at
    /// least one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<u64>,
    /// NATS: the subject of the messages (a publish's, a delivered copy's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Where each column comes from: `TABLE.COLUMN` or `TABLE.$N` (PostgreSQL),
    /// `payload:/JSON/POINTER` or `header:NAME` (NATS).
    #[serde(flatten)]
    pub columns: BTreeMap<String, String>,
}
