//! A strict checker for the subset of Mermaid the renderers write (`sequenceDiagram` for chains,
//! `flowchart` for boundaries), run over every golden `.mmd` and over the chain of every task and
//! violation and the boundaries of every scenario of the committed fixtures. It rejects what
//! Mermaid would reject (unknown participants, unbalanced blocks, `;` or a bare `#` in text, an
//! unknown arrow) and a little more (blank lines, edges to undeclared nodes), so a renderer change
//! that breaks the diagrams fails here without Mermaid installed. `scripts/check-mermaid.sh`
//! renders the same files with the real Mermaid when it is installed.

use crate::common;
use crate::variants;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use outbox_analyzer::render::{layout, mermaid::chain_mermaid};
use outbox_analyzer::views::boundaries;
use outbox_analyzer::views::chain::{self, Selector};
use outbox_analyzer::views::scene::Scenes;

/// Words Mermaid reads as keywords, never usable as a participant or node id.
const KEYWORDS: &[&str] = &[
    "end",
    "participant",
    "actor",
    "note",
    "loop",
    "alt",
    "else",
    "opt",
    "par",
    "and",
    "rect",
    "critical",
    "break",
    "title",
    "activate",
    "deactivate",
    "autonumber",
    "box",
    "create",
    "destroy",
    "subgraph",
    "style",
    "graph",
    "flowchart",
];

/// Message arrows of `sequenceDiagram`, longest first so `-->>` is not read as `-->`.
const ARROWS: &[&str] = &["-->>", "->>", "--x", "-x", "--)", "-)", "-->", "->"];

/// Checks a Mermaid diagram; the error names the 1-based line.
pub fn check(text: &str) -> Result<(), String> {
    let mut lines = text.lines().enumerate();
    let header = lines.next().map(|(_, l)| l.trim()).ok_or("empty diagram")?;
    let rest: Vec<(usize, &str)> = lines.collect();
    // The renderers write no blank lines; inside a block Mermaid may end the statement there.
    if let Some((n, _)) = rest.iter().find(|(_, l)| l.trim().is_empty()) {
        return Err(format!("line {}: blank line", n + 1));
    }
    let body = rest.iter().map(|(i, l)| (i + 1, l.trim()));
    match header.split_whitespace().collect::<Vec<_>>().as_slice() {
        ["sequenceDiagram"] => sequence(body),
        ["flowchart" | "graph", dir] if ["LR", "RL", "TB", "TD", "BT"].contains(dir) => {
            flowchart(body)
        }
        _ => Err(format!("line 1: unknown header `{header}`")),
    }
}

fn is_id(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
        && !KEYWORDS.contains(&s.to_ascii_lowercase().as_str())
}

/// Text after `:` (messages, notes), aliases and titles: Mermaid ends a statement at `;` and
/// reads `#...;` as an entity, so only entity codes may hold them.
fn check_text(s: &str) -> Result<(), String> {
    if s.trim().is_empty() {
        return Err("empty text".into());
    }
    let mut rest = s;
    while let Some(at) = rest.find(['#', ';']) {
        let tail = &rest[at..];
        if !tail.starts_with('#') {
            return Err(format!("`;` in text `{s}`"));
        }
        let code = tail[1..].split(';').next().unwrap_or("");
        let entity = tail[1..].contains(';')
            && !code.is_empty()
            && (code.chars().all(|c| c.is_ascii_digit())
                || code.chars().all(|c| c.is_ascii_alphabetic()));
        if !entity {
            return Err(format!("bare `#` in text `{s}`"));
        }
        rest = &tail[code.len() + 2..];
    }
    Ok(())
}

fn sequence<'a>(body: impl Iterator<Item = (usize, &'a str)>) -> Result<(), String> {
    let mut participants = BTreeSet::new();
    let mut open: Vec<&str> = Vec::new();
    let known = |p: &str, participants: &BTreeSet<String>| {
        if participants.contains(p.trim()) {
            Ok(())
        } else {
            Err(format!("unknown participant `{}`", p.trim()))
        }
    };
    for (n, line) in body.filter(|(_, l)| !l.is_empty()) {
        let at = |e: String| format!("line {n}: {e}");
        let word = line.split_whitespace().next().unwrap_or("");
        match word {
            "title" => check_text(&line[5..]).map_err(at)?,
            "participant" | "actor" => {
                let decl = line[word.len()..].trim();
                let (id, alias) = match decl.split_once(" as ") {
                    Some((id, alias)) => (id.trim(), Some(alias)),
                    None => (decl, None),
                };
                if !is_id(id) {
                    return Err(at(format!("bad participant id `{id}`")));
                }
                if let Some(a) = alias {
                    check_text(a).map_err(at)?;
                    if a.contains([',', ':']) {
                        return Err(at(format!("`,` or `:` in alias `{a}`")));
                    }
                }
                if !participants.insert(id.to_string()) {
                    return Err(at(format!("participant `{id}` declared twice")));
                }
            }
            "Note" | "note" => {
                let (place, text) = line[4..]
                    .split_once(':')
                    .ok_or_else(|| at("note without `:`".into()))?;
                let place = place.trim();
                let who = ["over ", "left of ", "right of "]
                    .iter()
                    .find_map(|p| place.strip_prefix(p))
                    .ok_or_else(|| at(format!("bad note placement `{place}`")))?;
                let who: Vec<&str> = who.split(',').collect();
                if who.len() > 2 || (who.len() == 2 && !place.starts_with("over")) {
                    return Err(at(format!("bad note placement `{place}`")));
                }
                for p in who {
                    known(p, &participants).map_err(at)?;
                }
                check_text(text).map_err(at)?;
            }
            "rect" | "loop" | "alt" | "opt" | "par" | "critical" | "break" => open.push(word),
            "else" | "and" => {
                let inside = if word == "else" { "alt" } else { "par" };
                if open.last() != Some(&inside) {
                    return Err(at(format!("`{word}` outside `{inside}`")));
                }
            }
            "end" => {
                if line != "end" || open.pop().is_none() {
                    return Err(at("`end` without a block".into()));
                }
            }
            _ => {
                let (head, text) = line
                    .split_once(':')
                    .ok_or_else(|| at(format!("not a statement: `{line}`")))?;
                let (from, arrow, to) = ARROWS
                    .iter()
                    .find_map(|a| head.split_once(a).map(|(f, t)| (f, *a, t)))
                    .ok_or_else(|| at(format!("no arrow in `{head}`")))?;
                if arrow.is_empty() || to.contains(['-', '>']) {
                    return Err(at(format!("bad arrow in `{head}`")));
                }
                known(from, &participants).map_err(at)?;
                known(to, &participants).map_err(at)?;
                check_text(text).map_err(at)?;
            }
        }
    }
    match open.last() {
        Some(b) => Err(format!("`{b}` block not closed")),
        None => Ok(()),
    }
}

/// A node statement `id[...]`, `id(...)`, `id([...])`, `id{...}`: the id and the label.
fn node(line: &str) -> Option<(&str, &str)> {
    let open = line.find(['[', '(', '{'])?;
    let (id, shape) = line.split_at(open);
    let pairs = [("([", "])"), ("[", "]"), ("(", ")"), ("{", "}")];
    let (o, c) = pairs.iter().find(|(o, _)| shape.starts_with(o))?;
    let label = shape.strip_prefix(o)?.strip_suffix(c)?;
    Some((id, label))
}

fn check_label(label: &str) -> Result<(), String> {
    match label.strip_prefix('"').and_then(|l| l.strip_suffix('"')) {
        Some(inner) if inner.contains('"') => Err(format!("`\"` inside label `{label}`")),
        Some(inner) if inner.trim().is_empty() => Err("empty label".into()),
        Some(_) => Ok(()),
        None if label.contains(['[', ']', '(', ')', '{', '}', '"', '|', ';']) => {
            Err(format!("unquoted label with special characters `{label}`"))
        }
        None => check_text(label),
    }
}

fn flowchart<'a>(body: impl Iterator<Item = (usize, &'a str)>) -> Result<(), String> {
    let mut nodes = BTreeSet::new();
    let mut edges = Vec::new();
    let mut styles = Vec::new();
    let mut depth = 0usize;
    for (n, line) in body.filter(|(_, l)| !l.is_empty()) {
        let at = |e: String| format!("line {n}: {e}");
        if line == "end" {
            depth = depth
                .checked_sub(1)
                .ok_or_else(|| at("`end` without `subgraph`".into()))?;
        } else if let Some(sub) = line.strip_prefix("subgraph ") {
            let (id, label) = node(sub).unwrap_or((sub, "x"));
            if !is_id(id) {
                return Err(at(format!("bad subgraph id `{id}`")));
            }
            check_label(label).map_err(at)?;
            nodes.insert(id.to_string());
            depth += 1;
        } else if let Some(style) = line.strip_prefix("style ") {
            let (id, props) = style
                .split_once(' ')
                .ok_or_else(|| at("style without properties".into()))?;
            for p in props.split(',') {
                let ok = p.split_once(':').is_some_and(|(k, v)| {
                    !k.trim().is_empty()
                        && k.trim().chars().all(|c| c.is_ascii_lowercase() || c == '-')
                        && !v.trim().is_empty()
                        && !v.contains(';')
                });
                if !ok {
                    return Err(at(format!("bad style `{p}`")));
                }
            }
            styles.push((n, id.to_string()));
        } else if let Some((from, to)) = ["-->", "---", "-.->", "==>"]
            .iter()
            .find_map(|a| line.split_once(&format!(" {a} ")))
        {
            for id in [from, to] {
                if !is_id(id.trim()) {
                    return Err(at(format!("bad edge end `{id}`")));
                }
            }
            edges.push((n, from.trim().to_string(), to.trim().to_string()));
        } else {
            let (id, label) = node(line).ok_or_else(|| at(format!("not a statement: `{line}`")))?;
            if !is_id(id) {
                return Err(at(format!("bad node id `{id}`")));
            }
            check_label(label).map_err(at)?;
            if !nodes.insert(id.to_string()) {
                return Err(at(format!("node `{id}` declared twice")));
            }
        }
    }
    if depth > 0 {
        return Err("`subgraph` not closed".into());
    }
    let ends = edges.iter().flat_map(|(n, a, b)| [(*n, a), (*n, b)]);
    for (n, id) in ends.chain(styles.iter().map(|(n, id)| (*n, id))) {
        if !nodes.contains(id) {
            return Err(format!("line {n}: unknown node `{id}`"));
        }
    }
    Ok(())
}

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .collect();
    v.sort();
    v
}

fn assert_valid(what: &str, text: &str) {
    if let Err(e) = check(text) {
        panic!("{what}: {e}\n{text}");
    }
}

/// Every chain (per task and per violation) and every boundaries flowchart of `scenes`; returns
/// how many diagrams were checked.
fn check_all(name: &str, scenes: &Scenes) -> usize {
    let mut checked = 0;
    for scene in scenes.scenes() {
        let tasks: BTreeSet<&str> = scene.rows().filter_map(|e| e.task_id()).collect();
        for task in tasks {
            let id = scene.id(task).expect("interned");
            let lay = layout::layout(&chain::task_chain(scene, id));
            let what = format!("{name} {} task {task}", scene.scenario);
            assert_valid(&what, &chain_mermaid(&lay));
            checked += 1;
        }
        let b = boundaries::derive(&scene);
        assert_valid(
            &format!("{name} {} boundaries", scene.scenario),
            &outbox_analyzer::render::boundaries::boundaries_mermaid(&b),
        );
        checked += 1;
    }
    for n in 1.. {
        let Ok(c) = chain::select(scenes, None, &Selector::Violation(n)) else {
            break;
        };
        let what = format!("{name} violation {n}");
        assert_valid(&what, &chain_mermaid(&layout::layout(&c)));
        checked += 1;
    }
    checked
}

#[test]
fn golden_mermaid_files_parse() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "mmd") {
            assert_valid(
                &path.display().to_string(),
                &std::fs::read_to_string(&path).unwrap(),
            );
            seen += 1;
        }
    }
    assert!(seen >= 2, "golden .mmd files expected");
}

#[test]
fn every_fixture_chain_and_boundaries_parse() {
    let mut checked = 0;
    for path in fixtures() {
        let scenes = Scenes::load(std::slice::from_ref(&path)).expect("load");
        checked += check_all(&path.display().to_string(), &scenes);
    }
    assert!(checked > 50, "only {checked} diagrams checked");
}

#[test]
fn hand_built_variants_parse() {
    let dir = tempfile::tempdir().unwrap();
    for (name, events) in [
        ("crashed-lab", variants::crashed_lab()),
        ("ack-before-commit", variants::ack_before_commit()),
        ("no-dedup", variants::no_dedup()),
    ] {
        let path = common::write(dir.path(), &format!("{name}.parquet"), &events);
        let scenes = Scenes::load(&[path]).expect("load");
        assert!(check_all(name, &scenes) > 0);
    }
}

#[test]
fn the_checker_rejects_what_mermaid_rejects() {
    let seq = "sequenceDiagram\n    participant a as A\n    participant b as B\n";
    let bad = [
        ("unknown participant", format!("{seq}    a->>c: hi\n")),
        ("semicolon in text", format!("{seq}    a->>b: one; two\n")),
        ("bare hash", format!("{seq}    Note over a: try #1\n")),
        (
            "unclosed block",
            format!("{seq}    rect rgb(1,2,3)\n    a->>b: x\n"),
        ),
        ("stray end", format!("{seq}    end\n")),
        ("blank line", format!("{seq}\n    a->>b: x\n")),
        ("bad arrow", format!("{seq}    a=>b: x\n")),
        (
            "keyword id",
            "sequenceDiagram\n    participant end\n".to_string(),
        ),
        ("twice", format!("{seq}    participant a\n")),
        ("wide note", format!("{seq}    Note left of a,b: x\n")),
        ("header", "sequencediagram\n".to_string()),
        (
            "edge to nowhere",
            "flowchart LR\n    s0[\"a\"]\n    s0 --> s1\n".to_string(),
        ),
        (
            "quote in label",
            "flowchart LR\n    s0[\"say \"hi\"\"]\n".to_string(),
        ),
        (
            "open subgraph",
            "flowchart LR\n    subgraph t0[\"tx\"]\n    s0[\"a\"]\n".to_string(),
        ),
        (
            "unquoted parens",
            "flowchart LR\n    s0[call (x)]\n".to_string(),
        ),
        (
            "style of nothing",
            "flowchart LR\n    style s9 stroke-dasharray: 5 5\n".to_string(),
        ),
    ];
    for (why, text) in bad {
        assert!(check(&text).is_err(), "{why} was accepted:\n{text}");
    }
    let good = format!(
        "{seq}    rect rgb(240,240,240)\n    a-->>b: ACK #35;1 · ok: yes\n    end\n    Note over a,b: x\n    b-xa: lost\n"
    );
    assert_valid("good", &good);
}
