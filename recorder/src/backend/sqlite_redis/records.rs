//! What the effect's Redis keys hold: a result in the `processed` hash, and the `rev:counter` a
//! dedup key remembers.

use serde::{Deserialize, Serialize};

use super::REDIS_REV_BASE;
use crate::protocol::model::DedupKey;

/// An effect's result as the `processed` hash keeps it.
#[derive(Serialize, Deserialize)]
pub(super) struct ResultRecord {
    pub(super) amount: i64,
    pub(super) task_id: String,
}

/// What a dedup key remembers (`rev:counter`) of the commit that wrote it.
pub(super) fn dedup_key(value: &str) -> DedupKey {
    let mut parts = value.split(':').map(|p| p.parse::<i64>().ok());
    let store_rev = parts.next().flatten().map(|rev| REDIS_REV_BASE + rev);
    DedupKey {
        store_rev,
        counter: parts.next().flatten(),
    }
}
