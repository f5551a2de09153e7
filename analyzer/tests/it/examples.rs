//! The recordings committed under `traces/examples/` say what `traces/README.md` says they say.

use assert_cmd::Command;

fn check(file: &str) -> i32 {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../traces/examples/").to_string() + file;
    Command::cargo_bin("analyzer")
        .unwrap()
        .args(["check", &path])
        .output()
        .unwrap()
        .status
        .code()
        .unwrap()
}

#[test]
fn the_reference_example_is_valid() {
    assert_eq!(check("reference.parquet"), 0);
}

#[test]
fn the_broken_example_is_invalid() {
    assert_eq!(check("ack-before-commit.parquet"), 1);
}

#[test]
fn the_sqlite_example_fails_only_its_dual_write() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../traces/examples/sqlite-redis.parquet"
    );
    let output = Command::cargo_bin("analyzer")
        .unwrap()
        .args(["check", "--json", path])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    for scenario in report["scenarios"].as_array().unwrap() {
        let expected = if scenario["scenario"] == "dual-write" {
            "invalid"
        } else {
            "valid"
        };
        assert_eq!(scenario["verdict"], expected, "{}", scenario["scenario"]);
    }
}
