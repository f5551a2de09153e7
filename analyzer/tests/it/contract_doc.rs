//! The README's table of kinds is the contract crate's kind table: generated from
//! `outbox_trace::Kind` and held to it here. On a mismatch the test prints the table to paste.
//! The `detail` keys the checks read are named in the README too (each by `detail_key!`, so a
//! renamed field breaks the build, then this test).

use outbox_trace::{detail_key, Kind};

fn readme() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    std::fs::read_to_string(path).expect("README.md")
}

/// The table of kinds and their required fields, as the README holds it.
fn kinds_table() -> String {
    let mut t = String::from("| kind | required fields |\n|---|---|\n");
    for kind in Kind::ALL {
        let fields: Vec<String> = kind
            .required_fields()
            .iter()
            .map(|f| format!("`{}`", f.column()))
            .collect();
        let fields = if fields.is_empty() {
            "-".to_string()
        } else {
            fields.join(", ")
        };
        t.push_str(&format!("| `{kind}` | {fields} |\n"));
    }
    t
}

#[test]
fn the_readme_table_of_kinds_is_the_code_s() {
    let readme = readme();
    let start = "<!-- kinds: generated from outbox_trace::Kind; analyzer/tests/it/contract_doc.rs checks it -->\n";
    let from = readme.find(start).expect("the kinds marker") + start.len();
    let to = from
        + readme[from..]
            .find("<!-- /kinds -->")
            .expect("the end marker");
    let want = kinds_table();
    assert_eq!(
        &readme[from..to],
        want,
        "README.md's table of kinds differs from the code; paste:\n{want}"
    );
}

#[test]
fn the_readme_names_every_detail_key_the_checks_read() {
    let readme = readme();
    let keys = [
        detail_key!(RunStart.counter_start),
        detail_key!(RunStart.records),
        detail_key!(Crash.announced),
        detail_key!(RunStart.ack_wait_ms),
        detail_key!(RunStart.tasks),
        detail_key!(Crash.point),
        detail_key!(Observed.counter),
        detail_key!(Observed.results),
        detail_key!(Observed.processed),
        detail_key!(Observed.dedup_keys),
        detail_key!(Observed.stream_messages),
        detail_key!(Observed.tasks),
        detail_key!(Observed.tasks_done),
        detail_key!(Observed.outbox_published),
        detail_key!(Observed.outbox_pending),
        detail_key!(RunEnd.recovered),
    ];
    for key in keys {
        assert!(
            readme.contains(&format!("`{key}`")),
            "README.md does not name the detail key `{key}`"
        );
    }
}
