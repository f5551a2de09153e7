//! Bad input and missing services: one clear line and a distinct exit code, never a panic.

use assert_cmd::Command;

fn recorder() -> Command {
    Command::cargo_bin("recorder").unwrap()
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_missing_etcd_binary_is_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let output = recorder()
        .env("PATH", empty.path())
        .args(["run", "--quiet", "--scenario", "lost-publish-ack", "--out"])
        .arg(dir.path().join("t.parquet"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4));
    let err = stderr(&output);
    assert!(err.contains("`etcd` was not found"), "{err}");
    assert!(
        err.contains("etcd-server nats-server redis-server"),
        "{err}"
    );
    assert!(err.contains("docker compose up -d"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// A Redis the recorder cannot reach is found only when the scenario is set up (the client
/// connects lazily), and is still a missing service.
#[test]
fn an_unreachable_redis_exits_4() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on port 1.
    let output = recorder()
        .args([
            "run",
            "--quiet",
            "--backend",
            "sqlite-redis",
            "--scenario",
            "place-order",
            "--redis",
            "redis://:hunter2@127.0.0.1:1",
            "--out",
        ])
        .arg(dir.path().join("t.parquet"))
        .output()
        .unwrap();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(4), "{err}");
    assert!(err.contains("cannot reach redis"), "{err}");
    assert!(
        !err.contains("hunter2") && !err.contains("panicked"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn an_unreachable_endpoint_is_one_line_without_its_password() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on port 1.
    let output = recorder()
        .args([
            "run",
            "--quiet",
            "--scenario",
            "lost-publish-ack",
            "--etcd",
            "http://alice:hunter2@127.0.0.1:1",
            "--out",
        ])
        .arg(dir.path().join("t.parquet"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains("cannot reach etcd at http://***@127.0.0.1:1"),
        "{err}"
    );
    assert!(!err.contains("hunter2") && !err.contains("alice"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bad_flags_exit_2() {
    for args in [
        vec!["run", "--scenario", "nope"],
        vec!["run", "--protocol", "nope"],
        vec!["run", "--ack-wait", "soon"],
        vec!["run", "--etcd", "ftp://x"],
        vec!["frobnicate"],
    ] {
        let output = recorder().args(&args).output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(!stderr(&output).contains("panicked"));
    }
}

#[test]
fn the_bench_is_no_recorder_command() {
    let help = recorder().arg("--help").output().unwrap();
    assert_eq!(help.status.code(), Some(0));
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.contains("  run "), "{text}");
    assert!(!text.contains("bench"), "{text}");
    let output = recorder().arg("bench").output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
}

#[test]
fn the_actor_command_refuses_to_run_without_a_spec() {
    let output = recorder().arg("actor").write_stdin("").output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("started by `recorder run`"));
}

#[test]
fn an_unreadable_nats_credentials_file_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let output = recorder()
        .args([
            "run",
            "--quiet",
            "--scenario",
            "lost-publish-ack",
            "--nats-creds",
            "/nonexistent/user.creds",
            "--out",
        ])
        .arg(dir.path().join("t.parquet"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains("credentials file /nonexistent/user.creds"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn a_cluster_the_recorder_cannot_start_is_one_line_and_exit_2() {
    let cases: [(&[&str], &str); 3] = [
        (&["--cluster", "2"], "--cluster must be 1, 3 or 5"),
        (
            &["--cluster", "3", "--backend", "sqlite-redis"],
            "--cluster needs --backend etcd-jetstream",
        ),
        (
            &["--cluster", "3", "--etcd", "http://127.0.0.1:1"],
            "--cluster starts its own services",
        ),
    ];
    for (args, expected) in cases {
        let output = recorder().arg("run").args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let err = stderr(&output);
        assert!(err.contains(expected), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}
