//! The book in `docs/` builds with `mdbook` (the binary `scripts/deps.sh` installs), and every
//! link inside it resolves: each relative `href` of the built pages names a file of the book, and
//! each `#anchor` an `id` on that page. The README's and CONTRIBUTING's relative links name files
//! of the repository. Every line of a fenced block marked `sh,runnable` is run from the
//! repository's root against the built binaries, and exits as its comment says (`(exit N)`, else
//! 0). A missing `mdbook` fails the test with one line saying how to install it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `mdbook` on the PATH, else where `cargo install` puts it.
fn mdbook() -> PathBuf {
    let installed = std::env::var_os("HOME")
        .map(|home| PathBuf::from(home).join(".cargo/bin/mdbook"))
        .filter(|p| p.exists());
    let on_path = Command::new("mdbook")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    match (on_path, installed) {
        (true, _) => PathBuf::from("mdbook"),
        (false, Some(path)) => path,
        (false, None) => panic!(
            "`mdbook` is not installed: the book test needs it (scripts/deps.sh installs it with \
             `cargo install mdbook`)"
        ),
    }
}

/// The values of `attribute="..."` in `html`.
fn values<'a>(html: &'a str, attribute: &str) -> Vec<&'a str> {
    let open = format!("{attribute}=\"");
    html.match_indices(&open)
        .filter_map(|(at, _)| {
            let from = at + open.len();
            html[from..].find('"').map(|len| &html[from..from + len])
        })
        .collect()
}

/// Every link that leaves the page for another place of the same site (not a URL with a
/// scheme, not a bare `#` of a script).
fn internal(href: &str) -> bool {
    !(href.is_empty()
        || href == "#"
        || href.contains("://")
        || href.starts_with("mailto:")
        || href.starts_with("javascript:"))
}

/// Builds the book in `book` into a temporary directory; returns it and its broken links.
fn build(book: &Path) -> (tempfile::TempDir, Vec<String>) {
    let out = tempfile::tempdir().unwrap();
    let built = Command::new(mdbook())
        .arg("build")
        .arg(book)
        .arg("--dest-dir")
        .arg(out.path())
        .output()
        .expect("mdbook runs");
    assert!(
        built.status.success(),
        "mdbook build {} failed: {}",
        book.display(),
        String::from_utf8_lossy(&built.stderr)
    );
    let broken = broken_links(out.path());
    (out, broken)
}

#[test]
fn the_book_builds_and_every_link_in_it_resolves() {
    let (out, broken) = build(&root().join("docs"));
    let pages = std::fs::read_dir(out.path()).unwrap().flatten();
    let pages = pages.filter(|e| e.path().extension().is_some_and(|x| x == "html"));
    assert!(pages.count() >= 10);
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn a_link_to_a_missing_page_or_anchor_is_found() {
    let book = tempfile::tempdir().unwrap();
    std::fs::create_dir(book.path().join("src")).unwrap();
    std::fs::write(book.path().join("book.toml"), "[book]\ntitle = \"t\"\n").unwrap();
    std::fs::write(
        book.path().join("src/SUMMARY.md"),
        "# Summary\n\n- [One](one.md)\n- [Two](two.md)\n",
    )
    .unwrap();
    std::fs::write(
        book.path().join("src/one.md"),
        "# One\n\n[fine](two.md#a-part) [gone](three.md) [no anchor](two.md#nowhere)\n",
    )
    .unwrap();
    std::fs::write(book.path().join("src/two.md"), "# Two\n\n## A part\n").unwrap();
    let (_out, broken) = build(book.path());
    let of_one: Vec<&String> = broken
        .iter()
        .filter(|b| b.starts_with("one.html"))
        .collect();
    assert_eq!(
        of_one,
        [
            "one.html: three.html (no such file)",
            "one.html: two.html#nowhere (no such anchor)"
        ]
    );
    assert!(!broken.iter().any(|b| b.contains("a-part")), "{broken:?}");
}

/// The internal links of the built book in `out` that name no file or no anchor.
fn broken_links(out: &Path) -> Vec<String> {
    let pages: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "html"))
        .collect();
    let ids: BTreeMap<PathBuf, BTreeSet<String>> = pages
        .iter()
        .map(|p| {
            let html = std::fs::read_to_string(p).unwrap();
            let ids = values(&html, "id").into_iter().map(String::from).collect();
            (p.clone(), ids)
        })
        .collect();
    let mut broken = Vec::new();
    for page in &pages {
        let html = std::fs::read_to_string(page).unwrap();
        for href in values(&html, "href").into_iter().filter(|h| internal(h)) {
            let (file, anchor) = href.split_once('#').unwrap_or((href, ""));
            let target = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            let name = page.file_name().unwrap().to_string_lossy();
            if !target.exists() {
                broken.push(format!("{name}: {href} (no such file)"));
            } else if !anchor.is_empty() {
                let known = ids.get(&target).is_some_and(|ids| ids.contains(anchor));
                if !known {
                    broken.push(format!("{name}: {href} (no such anchor)"));
                }
            }
        }
    }
    broken.sort();
    broken.dedup();
    broken
}

#[test]
fn the_readme_and_contributing_link_to_files_that_exist() {
    let mut broken = Vec::new();
    for doc in ["README.md", "CONTRIBUTING.md"] {
        let text = std::fs::read_to_string(root().join(doc)).unwrap();
        for (at, _) in text.match_indices("](") {
            let rest = &text[at + 2..];
            let Some(end) = rest.find(')') else { continue };
            let link = &rest[..end];
            if !internal(link) || link.starts_with('#') {
                continue;
            }
            let file = link.split_once('#').map_or(link, |(f, _)| f);
            if !root().join(file).exists() {
                broken.push(format!("{doc}: {link}"));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The lines of every `sh,runnable` block of the book: (chapter, line).
fn runnable() -> Vec<(String, String)> {
    let mut lines = Vec::new();
    let dir = root().join("docs/src");
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    chapters.sort();
    for chapter in chapters {
        let name = chapter.file_name().unwrap().to_string_lossy().to_string();
        let mut inside = false;
        for line in std::fs::read_to_string(&chapter).unwrap().lines() {
            if line.starts_with("```") {
                inside = line.trim() == "```sh,runnable";
                continue;
            }
            if inside && !line.trim().is_empty() && !line.trim_start().starts_with('#') {
                lines.push((name.clone(), line.to_string()));
            }
        }
    }
    lines
}

#[test]
fn every_runnable_command_of_the_book_exits_as_it_says() {
    let lines = runnable();
    assert!(lines.len() >= 4, "{lines:?}");
    let bin = assert_cmd::cargo::cargo_bin("analyzer");
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (chapter, line) in lines {
        let want = line
            .split_once("(exit ")
            .and_then(|(_, rest)| rest.split(')').next()?.parse::<i32>().ok())
            .unwrap_or(0);
        let output = Command::new("bash")
            .args(["-c", &line])
            .current_dir(root())
            .env("PATH", &path)
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(want),
            "{chapter}: {line}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
