//! No input crashes the analyzer: thousands of seeded mutants of the committed traces (bytes
//! flipped, ranges overwritten, the file cut short, the footer's length forged) each get an
//! answer, a verdict or a clear error, and never a panic. The same for the committed JSON Lines
//! and OTLP JSON Lines traces, plain and compressed: bad input is exit 2 with one line.

use std::path::{Path, PathBuf};

use outbox_analyzer::views::scene::Scenes;

/// Mutants per committed trace.
const MUTANTS: usize = 600;

/// A small, seeded generator (xorshift64*), so every run tries the same mutants.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(bytes: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut m = bytes.to_vec();
    let len = m.len();
    match rng.below(5) {
        // A few random bytes changed.
        0 => {
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(len);
                m[at] = rng.next() as u8;
            }
        }
        // A range overwritten with noise.
        1 => {
            let at = rng.below(len);
            let end = (at + 1 + rng.below(64)).min(len);
            for b in &mut m[at..end] {
                *b = rng.next() as u8;
            }
        }
        // Cut short.
        2 => m.truncate(rng.below(len)),
        // The footer's length (the four bytes before the closing magic) forged.
        3 if len >= 8 => {
            let forged = (rng.next() as u32).to_le_bytes();
            m[len - 8..len - 4].copy_from_slice(&forged);
        }
        // A byte of the footer (the metadata: sizes, offsets, counts) changed.
        _ => {
            let footer = u32::from_le_bytes(m[len - 8..len - 4].try_into().unwrap()) as usize;
            let start = len.saturating_sub(8 + footer.min(len - 8));
            let at = start + rng.below(len - 8 - start);
            m[at] = rng.next() as u8;
        }
    }
    m
}

/// The committed traces whose names end with one of `extensions`.
fn fixtures_ending(extensions: &[&str]) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            extensions.iter().any(|e| name.ends_with(e))
        })
        .collect();
    files.sort();
    files
}

fn fixtures() -> Vec<PathBuf> {
    fixtures_ending(&[".parquet"])
}

#[test]
fn no_mutant_of_a_committed_trace_makes_the_analyzer_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut accepted, mut rejected) = (0, 0);
    let mut caught: Option<Vec<u8>> = None;
    for fixture in fixtures() {
        let bytes = std::fs::read(&fixture).unwrap();
        for i in 0..MUTANTS {
            let mutant = mutate(&bytes, &mut rng);
            let path = dir.path().join("mutant.parquet");
            std::fs::write(&path, &mutant).unwrap();
            let outcome =
                std::panic::catch_unwind(|| match Scenes::load(std::slice::from_ref(&path)) {
                    Ok(scenes) => {
                        // A file that loads must also draw: the views read the same model.
                        for scene in scenes.scenes() {
                            let _ = outbox_analyzer::views::boundaries::derive(&scene);
                            let _ = outbox_analyzer::views::chain::most_eventful(scene);
                        }
                        true
                    }
                    Err(e) => {
                        let line = e.to_string();
                        assert!(!line.contains('\n'), "two lines: {line}");
                        false
                    }
                });
            let corrupt = || {
                let path = dir.path().join("mutant.parquet");
                matches!(Scenes::load(&[path]), Err(e) if e.to_string().contains("the decoder failed"))
            };
            if caught.is_none() && matches!(outcome, Ok(false)) && corrupt() {
                caught = Some(mutant.clone());
            }
            match outcome {
                Ok(true) => accepted += 1,
                Ok(false) => rejected += 1,
                Err(_) => {
                    let keep = dir.path().join("panicked.parquet");
                    std::fs::write(&keep, &mutant).unwrap();
                    panic!(
                        "mutant {i} of {} made the analyzer panic",
                        fixture.display()
                    );
                }
            }
        }
    }
    // Both kinds of answer occur: the mutations neither all break nor all miss the data.
    assert!(
        accepted > 0 && rejected > 0,
        "{accepted} accepted, {rejected} rejected"
    );

    // A mutant on which a decoder panicked: the command line says so in one line, exit 2.
    let mutant = caught.expect("some mutant makes a decoder panic");
    let path = dir.path().join("corrupt.parquet");
    std::fs::write(&path, mutant).unwrap();
    let out = assert_cmd::Command::cargo_bin("analyzer")
        .unwrap()
        .args(["check", path.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("corrupt file"), "{stderr}");
}

/// Mutants of a text trace: the mutations above, and a line's byte changed to one that breaks
/// JSON or UTF-8.
fn mutate_text(bytes: &[u8], rng: &mut Rng) -> Vec<u8> {
    if rng.below(4) == 0 {
        let mut m = bytes.to_vec();
        let at = rng.below(m.len());
        m[at] = *[b'"', b'{', b'}', b',', b'\n', 0xff, b'9', b'-']
            .get(rng.below(8))
            .unwrap();
        return m;
    }
    mutate(bytes, rng)
}

#[test]
fn no_mutant_of_a_committed_text_trace_makes_the_analyzer_panic() {
    const TEXT_MUTANTS: usize = 300;
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let files = fixtures_ending(&[".jsonl", ".jsonl.gz", ".jsonl.zst"]);
    assert!(files.len() >= 5, "{files:?}");
    for fixture in files {
        let bytes = std::fs::read(&fixture).unwrap();
        let name = fixture.file_name().unwrap().to_string_lossy().into_owned();
        let (mut accepted, mut rejected) = (0, Vec::new());
        for i in 0..TEXT_MUTANTS {
            let mutant = mutate_text(&bytes, &mut rng);
            let path = dir.path().join(format!("mutant-{i}-{name}"));
            std::fs::write(&path, &mutant).unwrap();
            let outcome =
                std::panic::catch_unwind(|| match Scenes::load(std::slice::from_ref(&path)) {
                    Ok(scenes) => {
                        for scene in scenes.scenes() {
                            let _ = outbox_analyzer::views::boundaries::derive(&scene);
                            let _ = outbox_analyzer::views::chain::most_eventful(scene);
                        }
                        true
                    }
                    Err(e) => {
                        let line = e.to_string();
                        assert!(!line.contains('\n'), "two lines: {line}");
                        false
                    }
                });
            match outcome {
                Ok(true) => {
                    accepted += 1;
                    std::fs::remove_file(&path).unwrap();
                }
                Ok(false) => rejected.push(path),
                Err(_) => panic!(
                    "mutant {i} of {name} made the analyzer panic (kept at {})",
                    path.display()
                ),
            }
        }
        // A compressed mutant nearly always fails its checksum; plain text is also accepted.
        let compressed = name.ends_with(".gz") || name.ends_with(".zst");
        assert!(
            (compressed || accepted > 0) && !rejected.is_empty(),
            "{name}: {accepted} accepted, {} rejected",
            rejected.len()
        );
        // On the command line, a rejected mutant is exit 2 with one line.
        for path in rejected.iter().step_by(rejected.len().div_ceil(8)) {
            let out = assert_cmd::Command::cargo_bin("analyzer")
                .unwrap()
                .args(["check", path.to_str().unwrap()])
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{}: {stderr}", path.display());
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
        }
    }
}
