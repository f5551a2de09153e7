//! Rows by event, task, aggregate and actor life: the indices every view reads instead of
//! scanning the whole history once per task. Built once per history in two linear passes
//! (count, then fill), as compressed lists: one offset per id and one `u32` per entry.

use crate::model::intern::{FastMap, Id};
use crate::model::row::Row;

/// The rows of each id, in `seq` order.
#[derive(Debug, Default)]
pub struct Postings {
    /// `starts[i]..starts[i + 1]`: the slice of `rows` that belongs to id index `i`.
    starts: Vec<u32>,
    rows: Vec<u32>,
}

impl Postings {
    fn build(rows: &[Row], bound: usize, key: impl Fn(&Row) -> Option<Id>) -> Self {
        let mut starts = vec![0u32; bound + 1];
        for r in rows {
            if let Some(id) = key(r) {
                starts[id.index() + 1] += 1;
            }
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut next = starts.clone();
        let mut out = vec![0u32; starts[bound] as usize];
        for (at, r) in rows.iter().enumerate() {
            if let Some(id) = key(r) {
                let slot = &mut next[id.index()];
                out[*slot as usize] = at as u32;
                *slot += 1;
            }
        }
        Postings { starts, rows: out }
    }

    /// The row indices of `id`, ascending.
    pub fn of(&self, id: Id) -> &[u32] {
        let i = id.index();
        match (self.starts.get(i), self.starts.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.rows[a as usize..b as usize],
            _ => &[],
        }
    }

    /// Every id with rows, in id order.
    pub fn ids(&self) -> impl Iterator<Item = Id> + '_ {
        self.starts
            .windows(2)
            .enumerate()
            .filter(|(_, w)| w[1] > w[0])
            .filter_map(|(i, _)| Id::from_index(i))
    }
}

/// The indices of one history.
#[derive(Debug, Default)]
pub struct Indices {
    /// Rows by `event_id`.
    pub by_event: Postings,
    /// Rows by `task_id`.
    pub by_task: Postings,
    /// Rows by `aggregate_id`.
    pub by_aggregate: Postings,
    /// Rows by actor life `(actor, incarnation)`.
    by_life: FastMap<(Id, u32), Vec<u32>>,
}

impl Indices {
    /// Indexes `rows` (sorted by `seq`), whose ids are all below `bound`.
    pub fn build(rows: &[Row], bound: usize) -> Self {
        let mut by_life: FastMap<(Id, u32), Vec<u32>> = FastMap::default();
        for (at, r) in rows.iter().enumerate() {
            by_life
                .entry((r.actor, r.incarnation))
                .or_default()
                .push(at as u32);
        }
        Indices {
            by_event: Postings::build(rows, bound, |r| r.event),
            by_task: Postings::build(rows, bound, |r| r.task),
            by_aggregate: Postings::build(rows, bound, |r| r.aggregate),
            by_life,
        }
    }

    /// Every actor that has rows, each once.
    pub fn actors(&self) -> impl Iterator<Item = Id> + '_ {
        let mut actors: Vec<Id> = self.by_life.keys().map(|(a, _)| *a).collect();
        actors.sort_unstable();
        actors.dedup();
        actors.into_iter()
    }

    /// The rows of one actor life, ascending.
    pub fn life(&self, actor: Id, incarnation: u32) -> &[u32] {
        self.by_life
            .get(&(actor, incarnation))
            .map_or(&[], Vec::as_slice)
    }

    /// The rows of a task: those carrying its id, and those of its events that lack a `task_id`
    /// (another producer's deliveries, say), ascending and without repeats.
    pub fn task_rows(&self, rows: &[Row], task: Id) -> Vec<u32> {
        let own = self.by_task.of(task);
        let mut events: Vec<Id> = own
            .iter()
            .filter_map(|&at| rows[at as usize].event)
            .collect();
        events.sort_unstable();
        events.dedup();
        let mut out: Vec<u32> = own.to_vec();
        for e in events {
            out.extend_from_slice(self.by_event.of(e));
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}
