//! The layout stays acyclic and layered: `scripts/layers.py` finds no import circle between the
//! files of any crate of the workspace, each folder uses only the folders the architecture
//! chapter lists before it, and the analyzer's and the recorder's `src/` keep at most 12 entries
//! at the top level. The checker itself is shown to find a circle and a folder out of order where
//! there is one.

use std::path::Path;
use std::process::Command;

fn layers(args: &[&str]) -> std::process::Output {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/layers.py");
    Command::new("python3")
        .arg(script)
        .args(args)
        .output()
        .expect("python3 runs scripts/layers.py")
}

#[test]
fn no_crate_of_the_workspace_has_an_import_circle() {
    let output = layers(&[]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}");
    for crate_src in ["analyzer/src", "recorder/src"] {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{crate_src}: ")) && l.ends_with("at top level"))
            .unwrap_or_else(|| panic!("no count for {crate_src} in {text}"));
        let entries: usize = line
            .split_whitespace()
            .nth(1)
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{line}"));
        assert!(entries <= 12, "{line}");
    }
}

#[test]
fn the_checker_finds_a_circle_through_a_re_export() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |name: &str, text: &str| std::fs::write(src.join(name), text).unwrap();
    write("lib.rs", "mod a;\nmod b;\nmod c;\npub use c::Gamma;\n");
    write("a.rs", "use crate::b::Beta;\npub struct Alpha(Beta);\n");
    write(
        "b.rs",
        "pub struct Beta;\npub fn make() -> crate::Gamma { todo!() }\n",
    );
    write("c.rs", "pub struct Gamma(crate::a::Alpha);\n");
    let output = layers(&[src.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("import circle between 3 files"), "{text}");
    assert!(Path::new(src).join("a.rs").exists());

    write("b.rs", "pub struct Beta;\n");
    let output = layers(&[src.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

#[test]
fn the_checker_finds_a_folder_that_uses_one_listed_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    for folder in ["low", "high"] {
        std::fs::create_dir(src.join(folder)).unwrap();
    }
    let write = |name: &str, text: &str| std::fs::write(src.join(name), text).unwrap();
    write("lib.rs", "mod low;\nmod high;\n");
    write("low/mod.rs", "pub struct Low(pub crate::high::High);\n");
    write("high/mod.rs", "pub struct High;\n");
    let src_arg = src.to_str().unwrap();
    let output = layers(&["--order=low,high", src_arg]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("low/ uses high/, which is listed after it"),
        "{text}"
    );
    let output = layers(&["--order=high,low", src_arg]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let output = layers(&["--order=high", src_arg]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("folder low/ is not in the architecture chapter's list"),
        "{text}"
    );
}
