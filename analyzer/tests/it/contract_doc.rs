//! The book's table of kinds (`docs/src/trace-format.md`) is the contract crate's kind table:
//! generated from `outbox_trace::Kind` and held to it here. On a mismatch the test prints the
//! table to paste. The `detail` keys the checks read are named in the book too (each by
//! `detail_key!`, so a renamed field breaks the build, then this test).

use outbox_trace::{detail_key, Kind};

/// Every chapter of the book, one after another.
fn readme() -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("docs/src")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("a chapter"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The table of kinds and their required fields, as the book holds it: those that identify a
/// step, then those only some invariants read.
fn kinds_table() -> String {
    let mut t = String::from(
        "| kind | identify the step | read by some invariants |\n|---|---|---|\n",
    );
    let list = |fields: Vec<String>| {
        if fields.is_empty() {
            "-".to_string()
        } else {
            fields.join(", ")
        }
    };
    for kind in Kind::ALL {
        let (identify, read): (Vec<_>, Vec<_>) =
            kind.required_fields().iter().partition(|f| f.identifies());
        let names = |fs: Vec<&outbox_trace::Field>| {
            list(fs.iter().map(|f| format!("`{}`", f.column())).collect())
        };
        t.push_str(&format!(
            "| `{kind}` | {} | {} |\n",
            names(identify),
            names(read)
        ));
    }
    t
}

#[test]
fn the_books_table_of_kinds_is_the_code_s() {
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
        "docs/src/trace-format.md's table of kinds differs from the code; paste:\n{want}"
    );
}

#[test]
fn the_book_names_every_detail_key_the_checks_read() {
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
            "the book (docs/src) does not name the detail key `{key}`"
        );
    }
}
