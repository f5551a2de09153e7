//! `analyzer check --junit FILE`: a test suite per scenario, a test case per invariant. On a
//! trace with one FAIL, two unknowns and passes: one failure (the violation's line and witness
//! chain), a skipped case per unknown (its reason), the rest passed; a named fault that never fired is a skipped
//! case of its own; the document is valid against the JUnit schema CI reporters read
//! (`tests/junit/junit.xsd`, checked with xmllint).

use std::path::Path;
use std::process::Command as Std;

use assert_cmd::Command;
use outbox_trace::Kind;

use crate::common::{ev, lab, write, Set};

fn junit_of(events: &[outbox_trace::Event]) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let trace = write(dir.path(), "t.parquet", events);
    let xml = dir.path().join("check.xml");
    let output = Command::cargo_bin("analyzer")
        .unwrap()
        .arg("check")
        .arg(&trace)
        .arg("--junit")
        .arg(&xml)
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&xml).expect("the JUnit file is written");
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/junit/junit.xsd");
    let lint = Std::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(&schema)
        .arg(&xml)
        .output()
        .expect("xmllint (scripts/deps.sh installs libxml2-utils)");
    assert!(
        lint.status.success(),
        "not valid JUnit: {}\n{text}",
        String::from_utf8_lossy(&lint.stderr)
    );
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        text,
    )
}

#[test]
fn a_fail_unknowns_and_passes_are_a_failure_skipped_cases_and_the_rest_passed() {
    let mut events = lab();
    // A duplicate effect of evt-1 (single-effect FAILs) and no observed row (observed-agrees
    // is unknown).
    let at = events.len() - 2;
    events.insert(
        at,
        ev(Kind::EffectCommitted, "worker")
            .task("t-1")
            .event("evt-1")
            .amount(2, 12)
            .rev(40),
    );
    events.retain(|e| e.kind != Kind::Observed);
    let (code, stdout, xml) = junit_of(&events);
    assert_eq!(code, 1, "{stdout}");
    let failures = xml.matches("<failure ").count();
    let skipped = xml.matches("<skipped ").count();
    let cases = xml.matches("<testcase ").count();
    assert!(failures >= 1 && skipped >= 1, "{xml}");
    assert!(
        xml.contains(r#"<testcase classname="lost-consumer-ack" name="single-effect">"#),
        "{xml}"
    );
    assert!(
        xml.contains(r#"message="FAIL single-effect: event_id evt-1"#),
        "{xml}"
    );
    assert!(
        xml.contains("seq "),
        "the witness chain is the failure's text: {xml}"
    );
    // Every failure and skipped case matches a FAIL or unknown line of the text report.
    assert_eq!(
        failures,
        stdout.matches(" FAIL:").count() + stdout.matches(" FAIL\n").count()
    );
    assert_eq!(skipped, stdout.matches(" unknown: ").count(), "{stdout}");
    assert!(cases > failures + skipped, "the rest passed: {xml}");
    assert!(
        xml.contains(&format!(
            r#"tests="{cases}" failures="{failures}" errors="0" skipped="{skipped}""#
        )),
        "{xml}"
    );
}

#[test]
fn a_named_fault_that_never_fired_is_a_skipped_case_and_the_faults_are_properties() {
    let mut events = lab();
    events[0] = ev(Kind::RunStart, "recorder")
        .detail(r#"{"tasks": 3, "faults": ["kill worker after outbox_marked"]}"#);
    let last = events.len() - 1;
    events[last] = ev(Kind::RunEnd, "recorder").detail(
        r#"{"recovered": true, "faults": [{"spec": "kill worker after outbox_marked", "fired": 0,
            "why": "worker reported no outbox_marked"}]}"#,
    );
    let (code, _, xml) = junit_of(&events);
    assert_eq!(code, 3);
    assert!(
        xml.contains(r#"<property name="fault kill worker after outbox_marked" value="named: fired 0 (worker reported no outbox_marked)"/>"#),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<skipped message="never fired: worker reported no outbox_marked"/>"#),
        "{xml}"
    );
    assert_eq!(xml.matches("<failure ").count(), 0);
}
