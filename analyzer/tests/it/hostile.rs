//! Hostile input: outputs that name an input or a device are refused with exit 2 and leave
//! everything as it was; trace values holding escape sequences, forged lines, control
//! characters and non-characters reach neither the terminal, nor the XML, nor the paths raw.

use std::os::unix::fs::FileTypeExt as _;
use std::path::{Path, PathBuf};
use std::process::Command as Std;

use crate::common::*;
use crate::variants::{ack_before_commit, crashed_lab};
use assert_cmd::Command;
use outbox_trace::Event;

fn analyzer() -> Command {
    Command::cargo_bin("analyzer").expect("binary")
}

/// Sets the window title, clears the screen, then forges a line of `check`'s.
const HOSTILE: &str = "\u{1b}]0;owned\u{7}\u{1b}[2J\nFAKE: verdict: valid\n\u{1}\u{fffe}\u{85}";

/// `events` with the scenario, task ids, event ids and crash points carrying [`HOSTILE`].
fn hostile(mut events: Vec<Event>) -> Vec<Event> {
    for e in &mut events {
        e.scenario = format!("s{HOSTILE}");
        for id in [&mut e.task_id, &mut e.event_id].into_iter().flatten() {
            id.push_str(HOSTILE);
        }
        if let Some(d) = &mut e.detail {
            if d.contains("\"point\"") {
                *d = d.replace("\"}", "\\u001b[2J\\nFAKE: verdict: valid\\ufffe\"}");
            }
        }
    }
    events
}

fn stdout(out: &assert_cmd::assert::Assert) -> String {
    String::from_utf8(out.get_output().stdout.clone()).expect("utf-8")
}

/// No raw escape nor forged line in what a command printed.
fn clean(what: &str, text: &str) {
    assert!(!text.contains('\u{1b}'), "{what}: raw ESC in\n{text}");
    assert!(!text.contains('\u{85}'), "{what}: raw C1 in\n{text}");
    assert!(
        !text.lines().any(|l| l.starts_with("FAKE")),
        "{what}: a forged line in\n{text}"
    );
}

fn well_formed(file: &Path) {
    let out = Std::new("xmllint")
        .arg("--noout")
        .arg(file)
        .output()
        .expect("xmllint");
    assert!(
        out.status.success(),
        "{} is not well-formed XML: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn check_chain_and_diff_print_hostile_values_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.parquet", &hostile(crashed_lab()));
    let b = write(dir.path(), "b.parquet", &hostile(ack_before_commit()));
    let out = analyzer().arg("check").arg(&b).assert().code(1);
    let text = stdout(&out);
    clean("check", &text);
    assert!(text.contains("\\u{1b}]0;owned"), "shown escaped:\n{text}");
    let task = format!("t-2{HOSTILE}");
    let out = analyzer()
        .args(["chain", "--task", &task])
        .arg(&b)
        .assert()
        .code(0);
    clean("chain", &stdout(&out));
    let out = analyzer().arg("diff").arg(&a).arg(&b).assert().code(1);
    clean("diff", &stdout(&out));
}

#[test]
fn svg_and_junit_are_well_formed_with_control_characters_and_non_characters() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.parquet", &hostile(crashed_lab()));
    let b = write(dir.path(), "b.parquet", &hostile(ack_before_commit()));
    let junit = dir.path().join("junit.xml");
    analyzer()
        .arg("check")
        .arg(&b)
        .arg("--junit")
        .arg(&junit)
        .assert()
        .code(1);
    well_formed(&junit);
    let svg = |name: &str| dir.path().join(name);
    analyzer()
        .arg("chain")
        .arg(&b)
        .arg("-o")
        .arg(svg("chain.svg"))
        .assert()
        .code(0);
    analyzer()
        .arg("boundaries")
        .arg(&b)
        .arg("-o")
        .arg(svg("b.svg"))
        .assert()
        .code(0);
    analyzer()
        .arg("timeline")
        .arg(&b)
        .arg("-o")
        .arg(svg("t.svg"))
        .assert()
        .code(0);
    analyzer()
        .arg("diff")
        .arg(&a)
        .arg(&b)
        .args(["--format", "svg", "-o"])
        .arg(svg("d.svg"))
        .assert()
        .code(1);
    for name in ["chain.svg", "b.svg", "t.svg", "d.svg"] {
        well_formed(&svg(name));
    }
    let report = dir.path().join("report");
    analyzer()
        .arg("report")
        .arg(&b)
        .arg("-o")
        .arg(&report)
        .assert()
        .code(0);
    let mut svgs = 0;
    for entry in std::fs::read_dir(&report).unwrap().flatten() {
        if entry.path().is_dir() {
            for f in std::fs::read_dir(entry.path()).unwrap().flatten() {
                if f.path().extension().is_some_and(|e| e == "svg") {
                    well_formed(&f.path());
                    svgs += 1;
                }
            }
        }
    }
    assert!(svgs > 0, "the report drew its scenario");
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(
        !md.contains('\u{1b}') && !md.lines().any(|l| l.starts_with("FAKE")),
        "{md}"
    );
}

/// Every command whose output may name a file, with `out` as that file.
fn writers(trace: &Path, other: &Path, out: &Path) -> Vec<Vec<std::ffi::OsString>> {
    let t = trace.as_os_str().to_owned();
    let o = out.as_os_str().to_owned();
    let args = |a: &[&str]| a.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
    let mut cmds = vec![
        [
            args(&["check"]),
            vec![t.clone(), "--junit".into(), o.clone()],
        ]
        .concat(),
        [
            args(&["report"]),
            vec![t.clone(), "--html".into(), o.clone()],
        ]
        .concat(),
        [args(&["chain"]), vec![t.clone(), "-o".into(), o.clone()]].concat(),
        [
            args(&["boundaries"]),
            vec![t.clone(), "-o".into(), o.clone()],
        ]
        .concat(),
        [args(&["timeline"]), vec![t.clone(), "-o".into(), o.clone()]].concat(),
        [args(&["import"]), vec![t.clone(), "-o".into(), o.clone()]].concat(),
        [
            args(&["compare"]),
            vec![t.clone(), "--plot".into(), o.clone()],
        ]
        .concat(),
    ];
    cmds.push(vec!["diff".into(), other.into(), t, "-o".into(), o]);
    cmds
}

#[test]
fn an_output_that_is_an_input_is_refused_and_the_trace_kept() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write(dir.path(), "t.parquet", &crashed_lab());
    let other = write(dir.path(), "o.parquet", &crashed_lab());
    let before = std::fs::read(&trace).unwrap();
    let link = dir.path().join("link.parquet");
    std::os::unix::fs::symlink(&trace, &link).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let spelled = dir.path().join("sub/../t.parquet");
    for out in [&trace, &link, &spelled] {
        for cmd in writers(&trace, &other, out) {
            let run = analyzer().args(&cmd).assert().code(2);
            let err = String::from_utf8(run.get_output().stderr.clone()).unwrap();
            assert!(err.contains("is the input"), "{cmd:?}: {err}");
            assert_eq!(err.trim().lines().count(), 1, "{cmd:?}: one line: {err}");
            assert_eq!(
                std::fs::read(&trace).unwrap(),
                before,
                "{cmd:?} kept the trace"
            );
        }
    }
}

#[test]
fn a_device_or_fifo_as_output_is_refused_and_stays_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write(dir.path(), "t.parquet", &crashed_lab());
    let fifo = dir.path().join("fifo");
    assert!(Std::new("mkfifo").arg(&fifo).status().unwrap().success());
    // Only a FIFO for `import`: an analyzer that renamed its file over `/dev/null` (as root)
    // would break the machine.
    let run = analyzer()
        .arg("import")
        .arg(&trace)
        .arg("-o")
        .arg(&fifo)
        .assert()
        .code(2);
    let err = String::from_utf8(run.get_output().stderr.clone()).unwrap();
    assert!(err.contains("is a FIFO, not a regular file"), "{err}");
    for out in [PathBuf::from("/dev/null"), fifo.clone()] {
        let run = analyzer()
            .arg("check")
            .arg(&trace)
            .arg("--junit")
            .arg(&out)
            .assert()
            .code(2);
        let err = String::from_utf8(run.get_output().stderr.clone()).unwrap();
        assert!(err.contains("not a regular file"), "{err}");
    }
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
}

fn named(events: &[Event], name: &str) -> Vec<Event> {
    let mut v = events.to_vec();
    for e in &mut v {
        e.scenario = name.into();
        e.run_id = format!("run-{}", name.len());
    }
    v
}

#[test]
fn report_directories_stay_inside_and_apart_whatever_the_scenario_names() {
    let dir = tempfile::tempdir().unwrap();
    let deep = dir.path().join("a/b/c/d");
    std::fs::create_dir_all(&deep).unwrap();
    let long = "n".repeat(300);
    let mut events = named(&crashed_lab(), "../../../../x");
    events.extend(named(&crashed_lab(), "p/q"));
    events.extend(named(&crashed_lab(), "p_q"));
    events.extend(named(&crashed_lab(), &long));
    events.extend(named(&crashed_lab(), ".."));
    let trace = write(dir.path(), "t.parquet", &events);
    let report = deep.join("report");
    analyzer()
        .arg("report")
        .arg(&trace)
        .arg("-o")
        .arg(&report)
        .assert()
        .code(0);
    assert!(
        !dir.path().join("x").exists(),
        "a name left the report's directory"
    );
    let subdirs: Vec<String> = std::fs::read_dir(&report)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(subdirs.len(), 5, "one directory per scenario: {subdirs:?}");
    assert!(
        subdirs.iter().all(|d| !d.starts_with('.') && d.len() <= 80),
        "{subdirs:?}"
    );
    assert!(subdirs.contains(&"p_q".to_string()), "{subdirs:?}");
    // Nothing was written above the report's directory.
    let above: Vec<_> = std::fs::read_dir(&deep)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(above, vec![std::ffi::OsString::from("report")]);
}
