//! [`About`]: which event a step is about (its `event_id`, task and place in its aggregate), and
//! [`TaskColumn`], how a step holds its `task_id`.

use serde::{Deserialize, Serialize};

use crate::Event;

/// How a step holds its `task_id`: `String` where the kind requires one, `Option<String>` where
/// it may be absent.
pub trait TaskColumn: Sized {
    /// The value written to the `task_id` column; `None` leaves it null.
    fn into_column(self) -> Option<String>;
    /// From the column's value; `None` when this holder requires it and it is absent.
    fn from_column(column: Option<String>) -> Option<Self>;
}

impl TaskColumn for String {
    fn into_column(self) -> Option<String> {
        Some(self)
    }
    fn from_column(column: Option<String>) -> Option<Self> {
        column
    }
}

impl TaskColumn for Option<String> {
    fn into_column(self) -> Option<String> {
        self
    }
    fn from_column(column: Option<String>) -> Option<Self> {
        Some(column)
    }
}

/// Which event a step is about: the event's stable id, its task, and its place in its aggregate.
/// `T` is `String` on the kinds that require a `task_id`, `Option<String>` on the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct About<T = Option<String>> {
    /// `event_id`: the event's stable id, the same on every copy and delivery of it.
    pub event_id: String,
    /// `task_id`: the task the event belongs to, required or not as `T` says.
    pub task_id: T,
    /// `aggregate_id`: the ordering group, when the producer has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregate_id: Option<String>,
    /// `aggregate_seq`: the event's position in its aggregate, assigned when its record commits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregate_seq: Option<u64>,
}

impl<T> About<T> {
    /// About the event `event_id` of task `task_id`, outside any aggregate.
    pub fn new(event_id: impl Into<String>, task_id: T) -> Self {
        About {
            event_id: event_id.into(),
            task_id,
            aggregate_id: None,
            aggregate_seq: None,
        }
    }
}

impl About<String> {
    /// The same, on a kind whose `task_id` may be absent.
    pub fn loose(self) -> About {
        self.into()
    }
}

impl From<About<String>> for About {
    fn from(a: About<String>) -> Self {
        About {
            event_id: a.event_id,
            task_id: Some(a.task_id),
            aggregate_id: a.aggregate_id,
            aggregate_seq: a.aggregate_seq,
        }
    }
}

impl<T: TaskColumn> About<T> {
    pub(super) fn write(self, e: &mut Event) {
        e.event_id = Some(self.event_id);
        e.task_id = self.task_id.into_column();
        e.aggregate_id = self.aggregate_id;
        e.aggregate_seq = self.aggregate_seq;
    }

    pub(super) fn read(e: &Event) -> Option<Self> {
        Some(About {
            event_id: e.event_id.clone()?,
            task_id: T::from_column(e.task_id.clone())?,
            aggregate_id: e.aggregate_id.clone(),
            aggregate_seq: e.aggregate_seq,
        })
    }
}
