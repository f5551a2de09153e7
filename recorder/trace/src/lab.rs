//! The dual-write lab's lines (`dualwrite.out`, `order_check.out`, `atleastonce.out`,
//! `report.txt`), computed from the `observed` details the recorder writes for the scenarios of one
//! run. One definition, so the recorder's files and the analyzer's report always say the same.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::detail::Observed;
use crate::Figures;

/// `lab.json`: the lab's figures per scenario, written by `recorder run --report` and by
/// `analyzer report`, in this one shape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LabJson {
    /// The traces the figures were counted from.
    pub traces: Vec<String>,
    /// One entry per `(run_id, scenario)`, in the trace's order.
    pub scenarios: Vec<LabScenario>,
}

/// One scenario of [`LabJson`]: who ran it, its figures under their own keys, and, when the
/// analyzer wrote the file, its verdicts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LabScenario {
    /// The scenario's name; with `run_id` it names the entry.
    pub scenario: String,
    /// The run that recorded the scenario; one trace may hold several runs.
    pub run_id: String,
    /// The backend that ran it (`etcd-jetstream`, `sqlite-redis`, `system:NAME`).
    pub backend: String,
    /// The protocol variant, when recorded.
    pub protocol: Option<String>,
    /// The figures, as [`crate::figures`] defines them.
    #[serde(flatten)]
    pub figures: Figures,
    /// From `run_end.detail.recovered`: whether everything was back up and quiet at the end; `None`
    /// when the trace does not say.
    pub recovered: Option<bool>,
    /// From `run_start` to `run_end`, when the recorder timed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<i64>,
    /// The combined verdict (`valid`, `invalid`, `unknown`), when the analyzer judged it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// Each invariant's verdict (`pass`, `fail`, `unknown`) by its id, when judged.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub invariants: BTreeMap<String, String>,
}

/// One lab file and its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabFile {
    /// The file's name: `dualwrite.out`, `order_check.out`, `atleastonce.out` or `report.txt`.
    pub name: &'static str,
    /// Its lines, without line ends.
    pub lines: Vec<String>,
}

/// The lab's files for the scenarios given as `(scenario, last observed detail)`. A file whose
/// scenario is absent is left out; `report.txt` sums every scenario given.
pub fn lab_files(observed: &[(&str, &Observed)]) -> Vec<LabFile> {
    let of = |name: &str| observed.iter().find(|(s, _)| *s == name).map(|(_, o)| *o);
    let mut files = Vec::new();
    if let Some(o) = of("dual-write") {
        let (orders, published) = (o.orders.unwrap_or(0), o.enqueued.unwrap_or(0));
        let word = if orders == published {
            "CONSISTENT"
        } else {
            "INCONSISTENT"
        };
        files.push(LabFile {
            name: "dualwrite.out",
            lines: vec![format!("{word} orders={orders} published={published}")],
        });
    }
    if let Some(o) = of("aggregate-order") {
        let line = if o.order_ok == Some(true) {
            "ORDER OK"
        } else {
            "ORDER VIOLATED"
        };
        files.push(LabFile {
            name: "order_check.out",
            lines: vec![line.to_string()],
        });
    }
    if let Some(o) = of("relay-crash") {
        let line = match o.duplicates.iter().flatten().next() {
            Some((id, count)) => format!("DUPLICATE event_id={id} count={count}"),
            None => "NO DUPLICATE".to_string(),
        };
        files.push(LabFile {
            name: "atleastonce.out",
            lines: vec![line],
        });
    }
    let sum = |figure: fn(&Observed) -> Option<i64>| -> i64 {
        observed.iter().filter_map(|(_, o)| figure(o)).sum()
    };
    files.push(LabFile {
        name: "report.txt",
        lines: vec![
            format!("orders={}", sum(|o| o.orders)),
            format!("outbox={}", sum(|o| o.outbox)),
            format!("enqueued={}", sum(|o| o.enqueued)),
            format!("processed_unique={}", sum(|o| o.processed_unique)),
        ],
    });
    files
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Detail, Kind};

    fn json(text: &str) -> Observed {
        Detail::parse(Kind::Observed, text)
            .unwrap()
            .observed()
            .unwrap()
            .clone()
    }

    #[test]
    fn the_lines_follow_the_observed_numbers() {
        let dual = json(r#"{"orders": 1, "enqueued": 0, "outbox": 0, "processed_unique": 0}"#);
        let order = json(
            r#"{"order_ok": false, "orders": 3, "enqueued": 3, "outbox": 3, "processed_unique": 3}"#,
        );
        let crash = json(
            r#"{"duplicates": {"evt-task-1": 2}, "orders": 3, "enqueued": 4, "outbox": 3, "processed_unique": 3}"#,
        );
        let files = lab_files(&[
            ("dual-write", &dual),
            ("aggregate-order", &order),
            ("relay-crash", &crash),
        ]);
        let text = |name: &str| {
            files
                .iter()
                .find(|f| f.name == name)
                .unwrap()
                .lines
                .join("\n")
        };
        assert_eq!(text("dualwrite.out"), "INCONSISTENT orders=1 published=0");
        assert_eq!(text("order_check.out"), "ORDER VIOLATED");
        assert_eq!(
            text("atleastonce.out"),
            "DUPLICATE event_id=evt-task-1 count=2"
        );
        assert_eq!(
            text("report.txt"),
            "orders=7\noutbox=6\nenqueued=7\nprocessed_unique=6"
        );
        assert_eq!(
            lab_files(&[]).len(),
            1,
            "only the report when no lab scenario ran"
        );
    }
}
