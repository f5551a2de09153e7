//! `outbox-bench` from the outside: its flags and their defaults, the exit codes of a bad command
//! line and of a missing recorder binary, and the one part that needs no service (`intake`)
//! measured for real.

use assert_cmd::Command;

fn bench() -> Command {
    Command::cargo_bin("outbox-bench").unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_lists_the_flags_with_their_defaults() {
    let output = bench().arg("--help").output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let help = text(&output.stdout);
    for flag in [
        "--tasks",
        "--big-tasks",
        "--seeds",
        "--jobs",
        "--out",
        "--example",
        "--parts",
        "--recorder",
        "--root",
    ] {
        assert!(help.contains(flag), "{flag} missing from:\n{help}");
    }
    for default in [
        "[default: 10000]",
        "[default: 100000]",
        "[default: 20]",
        "[default: 1]",
        "[default: bench]",
    ] {
        assert!(help.contains(default), "{default} missing from:\n{help}");
    }
    for part in [
        "pipeline",
        "overhead",
        "memory",
        "chaos",
        "detection",
        "system",
        "intake",
    ] {
        assert!(
            help.contains(&format!("- {part}:")),
            "{part} missing from:\n{help}"
        );
    }
}

#[test]
fn a_bad_command_line_exits_2() {
    for args in [
        &["--seeds", "0"][..],
        &["--parts", "nope"],
        &["--jobs", "17"],
    ] {
        let output = bench().args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn a_missing_recorder_binary_ends_the_bench_before_any_part() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = bench()
        .args(["--parts", "chaos", "--recorder"])
        .arg(dir.path().join("no-such-recorder"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let err = text(&output.stderr);
    assert!(err.starts_with("outbox-bench: --recorder "), "{err}");
    assert!(err.contains("no such file"), "{err}");
    assert!(!out.exists(), "{} was made", out.display());
}

#[test]
fn the_intake_part_measures_every_span_into_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = bench()
        .args(["--parts", "intake", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("### intake"));
    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    let intake = &results["intake"];
    assert_eq!(intake["spans"], 262_144, "{intake}");
    assert!(intake["spans_per_s"].as_f64().unwrap() > 0.0, "{intake}");
    assert!(intake["trace_bytes"].as_u64().unwrap() > 0, "{intake}");
    assert!(out.join("intake.parquet").is_file());
}
