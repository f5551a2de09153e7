//! Bounded, hang-free intake: a directory whose links loop back is walked once; a FIFO met in a
//! walk is refused, and one named on the command line (or standard input) is read once and
//! spooled, so `check` can read it again for its witnesses; a line longer than the cap is bad
//! input; a value that cannot be read is bad input, never a default; a Parquet page whose
//! checksum fails is bad input naming its column and row group; and JSON Lines are checked in
//! memory bounded by a batch, whatever their length; a long run of blank lines (a small gzip of
//! newlines) is bad input, found out quickly, while blank lines between rows still read.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn analyzer() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin("analyzer"))
}

/// Exit code, stdout and stderr of `child`, which must end within `limit` (else it is killed and
/// the test fails: something hung).
fn finish(mut child: Child, limit: Duration, what: &str) -> (i32, String, String) {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let out = child.wait_with_output().expect("output");
            return (
                status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            );
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `analyzer check ARGS`, which must end within 60 s.
fn check(args: &[&Path]) -> (i32, String, String) {
    let child = analyzer()
        .arg("check")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    finish(child, Duration::from_secs(60), "analyzer check")
}

/// The verdict lines of a `check` output (the file's path, which differs, left out).
fn verdicts(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| {
            l.starts_with("  ")
                && (l.contains(" pass") || l.contains(" FAIL") || l.contains(" unknown"))
        })
        .collect()
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// A writer that copies `source` into the FIFO `fifo` (it waits until a reader opens it).
fn feed(source: &Path, fifo: &Path) -> Child {
    Command::new("sh")
        .arg("-c")
        .arg("cat \"$1\" > \"$2\"")
        .arg("feed")
        .arg(source)
        .arg(fifo)
        .spawn()
        .expect("sh")
}

fn one_line(stderr: &str) {
    assert_eq!(stderr.lines().count(), 1, "one line expected: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_directory_with_two_links_to_itself_is_walked_once() {
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("traces");
    std::fs::create_dir(&traces).unwrap();
    std::fs::copy(
        fixture("etcd_reference.parquet"),
        traces.join("part.parquet"),
    )
    .unwrap();
    std::os::unix::fs::symlink(".", traces.join("a")).unwrap();
    std::os::unix::fs::symlink(&traces, traces.join("b")).unwrap();
    // A link to a sibling directory that links back, too.
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::os::unix::fs::symlink(&traces, other.join("back")).unwrap();
    std::os::unix::fs::symlink(&other, traces.join("c")).unwrap();

    let start = Instant::now();
    let (code, stdout, stderr) = check(&[&traces]);
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
    let (want, want_out, _) = check(&[&fixture("etcd_reference.parquet")]);
    assert_eq!(code, want, "{stderr}");
    // Read once: the same rows, not one copy per path to them.
    assert_eq!(verdicts(&stdout), verdicts(&want_out), "{stdout}");
    assert!(!stdout.contains("repeats seq"), "{stdout}");
}

#[test]
fn a_fifo_in_a_directory_walk_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture("etcd_reference.parquet"),
        dir.path().join("part-0.parquet"),
    )
    .unwrap();
    let fifo = dir.path().join("part-1.parquet");
    mkfifo(&fifo);
    let (code, stdout, stderr) = check(&[dir.path()]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    one_line(&stderr);
    assert!(stderr.contains("a FIFO"), "{stderr}");
    assert!(stderr.contains("part-1.parquet"), "{stderr}");
}

/// `check` of `source` through a FIFO gives what `check` of the file gives.
fn through_a_fifo(source: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("trace.pipe");
    mkfifo(&fifo);
    let mut writer = feed(source, &fifo);
    let (code, stdout, stderr) = check(&[&fifo]);
    let _ = writer.kill();
    let _ = writer.wait();
    let (want, want_out, want_err) = check(&[source]);
    assert_eq!(code, want, "{}: {stderr} / {want_err}", source.display());
    assert_eq!(verdicts(&stdout), verdicts(&want_out), "{stdout}");
    assert!(!verdicts(&stdout).is_empty(), "{stdout}");
}

#[test]
fn a_fifo_named_on_the_command_line_is_read_once() {
    // A trace with a violation: `check` reads it a second time for the witnesses.
    let (code, _, _) = check(&[&fixture("pyarrow_ack_before_commit.jsonl.zst")]);
    assert_eq!(code, 1);
    through_a_fifo(&fixture("pyarrow_ack_before_commit.jsonl.zst"));
    through_a_fifo(&fixture("pyarrow_ack_before_commit.otlp.jsonl"));
    through_a_fifo(&fixture("pyarrow_ack_before_commit.parquet"));
    through_a_fifo(&fixture("etcd_reference.jsonl"));
}

#[test]
fn standard_input_is_read_once_and_checked_with_its_witnesses() {
    for name in [
        "pyarrow_ack_before_commit.jsonl.zst",
        "pyarrow_ack_before_commit.parquet",
    ] {
        let source = fixture(name);
        let mut child = analyzer()
            .args(["check", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let bytes = std::fs::read(&source).unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        });
        let (code, stdout, stderr) = finish(child, Duration::from_secs(60), "check -");
        writer.join().unwrap();
        let (want, want_out, _) = check(&[&source]);
        assert_eq!(code, want, "{name}: {stderr}");
        assert_eq!(verdicts(&stdout), verdicts(&want_out), "{name}: {stdout}");
    }
}

/// A zstd file: `before` lines, then one line of `len` bytes of `x` (no JSON at all).
fn with_long_line(path: &Path, before: &[&str], len: usize) {
    let file = std::fs::File::create(path).unwrap();
    let mut z = zstd::stream::write::Encoder::new(file, 1).unwrap();
    for line in before {
        writeln!(z, "{line}").unwrap();
    }
    let chunk = vec![b'x'; 1 << 20];
    let mut left = len;
    while left > 0 {
        let n = left.min(chunk.len());
        z.write_all(&chunk[..n]).unwrap();
        left -= n;
    }
    z.write_all(b"\n").unwrap();
    z.finish().unwrap();
}

#[test]
fn a_line_longer_than_the_cap_is_bad_input_naming_the_cap() {
    let cap = outbox_trace::input::MAX_LINE_BYTES;
    assert_eq!(cap, 256 << 20);
    let dir = tempfile::tempdir().unwrap();
    let first = std::fs::read_to_string(fixture("etcd_reference.jsonl")).unwrap();
    let lines: Vec<&str> = first.lines().take(3).collect();
    // Past the first line (JSON Lines, decoded as they stream) and as the very first line.
    for (name, before) in [
        ("later.jsonl.zst", &lines[..]),
        ("first.jsonl.zst", &[][..]),
    ] {
        let path = dir.path().join(name);
        with_long_line(&path, before, cap + 1);
        let (code, stdout, stderr) = check(&[&path]);
        assert_eq!(code, 2, "{name}: {stdout}{stderr}");
        one_line(&stderr);
        assert!(stderr.contains("256 MiB"), "{name}: {stderr}");
        let line = format!("line {}", before.len() + 1);
        assert!(stderr.contains(&line), "{name}: {stderr}");
    }
}

/// One OTLP JSON Lines line: two spans of one worker, a delivery and its ACK; `start` is the
/// delivery's `startTimeUnixNano` as written, `attempt` its `outbox.attempt` value.
fn otlp_line(start: &str, attempt: &str) -> String {
    format!(
        concat!(
            r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"worker"}}}}]}},"#,
            r#""scopeSpans":[{{"spans":["#,
            r#"{{"name":"process","startTimeUnixNano":{start},"endTimeUnixNano":"1764547200000002000","attributes":["#,
            r#"{{"key":"messaging.operation.type","value":{{"stringValue":"process"}}}},"#,
            r#"{{"key":"messaging.message.id","value":{{"stringValue":"evt-1"}}}},"#,
            r#"{{"key":"outbox.attempt","value":{{"intValue":{attempt}}}}}]}},"#,
            r#"{{"name":"settle","startTimeUnixNano":"1764547200000003000","endTimeUnixNano":"1764547200000004000","attributes":["#,
            r#"{{"key":"messaging.operation.type","value":{{"stringValue":"settle"}}}},"#,
            r#"{{"key":"messaging.message.id","value":{{"stringValue":"evt-1"}}}}]}}"#,
            r#"]}}]}}]}}"#
        ),
        start = start,
        attempt = attempt
    )
}

#[test]
fn a_value_that_cannot_be_read_is_bad_input_not_a_default() {
    let dir = tempfile::tempdir().unwrap();
    // The readable line is checked (no false verdict needed to tell them apart: it is not bad).
    let good = dir.path().join("good.otlp.jsonl");
    std::fs::write(
        &good,
        otlp_line(r#""1764547200000001000""#, r#""1""#) + "\n",
    )
    .unwrap();
    let (code, stdout, stderr) = check(&[&good]);
    assert!(code == 0 || code == 1 || code == 3, "{stdout}{stderr}");
    let cases = [
        // A span time that is not a time (OTLP without `outbox.seq`: it would order the run).
        (
            otlp_line(r#""soon""#, r#""1""#),
            "`startTimeUnixNano` is not a time",
        ),
        (
            otlp_line("-5", r#""1""#),
            "`startTimeUnixNano` is not a time",
        ),
        (
            otlp_line("1.5e18", r#""1""#),
            "`startTimeUnixNano` is not a time",
        ),
        // An integer out of its column's range (`attempt` is 32 bits).
        (
            otlp_line(r#""1764547200000001000""#, r#""4294967296""#),
            "out of range",
        ),
        (
            otlp_line(r#""1764547200000001000""#, r#""99999999999999999999999""#),
            "out of range",
        ),
    ];
    for (n, (line, reason)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("bad-{n}.otlp.jsonl"));
        std::fs::write(&path, format!("{line}\n")).unwrap();
        let (code, stdout, stderr) = check(&[&path]);
        assert_eq!(code, 2, "case {n}: {stdout}{stderr}");
        one_line(&stderr);
        assert!(stderr.contains(reason), "case {n}: {stderr}");
    }
    // JSON Lines: integers past their column's range.
    let row = |seq: &str, attempt: &str| {
        format!(
            r#"{{"run_id":"r","scenario":"s","seq":{seq},"ts_ns":0,"backend":"b","actor":"worker","incarnation":0,"kind":"acked","attempt":{attempt}}}"#
        )
    };
    for (n, (line, column)) in [
        (row("18446744073709551616", "1"), "seq"),
        (row(r#""18446744073709551616""#, "1"), "seq"),
        (row("1", "4294967296"), "attempt"),
        (row("1", "1.0"), "attempt"),
    ]
    .iter()
    .enumerate()
    {
        let path = dir.path().join(format!("bad-{n}.jsonl"));
        std::fs::write(&path, format!("{line}\n")).unwrap();
        let (code, stdout, stderr) = check(&[&path]);
        assert_eq!(code, 2, "jsonl case {n}: {stdout}{stderr}");
        one_line(&stderr);
        assert!(
            stderr.contains(&format!("`{column}`")),
            "jsonl case {n}: {stderr}"
        );
    }
}

/// The byte offset of the last byte of column `name`'s chunk in row group `group`: inside its
/// last data page's body.
fn last_byte_of_chunk(path: &Path, group: usize, name: &str) -> usize {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let g = reader.metadata().row_group(group);
    let c = g
        .columns()
        .iter()
        .find(|c| c.column_path().string() == name)
        .expect("column");
    let start = c.dictionary_page_offset().unwrap_or(c.data_page_offset());
    usize::try_from(start + c.compressed_size() - 1).unwrap()
}

#[test]
fn a_page_whose_checksum_fails_is_bad_input_naming_column_and_row_group() {
    // pyarrow wrote a CRC32 on every page: the file reads as its source does.
    let good = fixture("pyarrow_checksums.parquet");
    let (code, stdout, stderr) = check(&[&good]);
    let (want, want_out, _) = check(&[&fixture("etcd_reference.parquet")]);
    assert_eq!(code, want, "{stderr}");
    assert_eq!(verdicts(&stdout), verdicts(&want_out));

    let dir = tempfile::tempdir().unwrap();
    for (group, column) in [(0, "seq"), (1, "event_id"), (1, "detail")] {
        let mut bytes = std::fs::read(&good).unwrap();
        let at = last_byte_of_chunk(&good, group, column);
        bytes[at] ^= 0x01;
        let path = dir.path().join(format!("flipped-{group}-{column}.parquet"));
        std::fs::write(&path, &bytes).unwrap();
        let (code, stdout, stderr) = check(&[&path]);
        assert_eq!(code, 2, "{column}: {stdout}{stderr}");
        one_line(&stderr);
        assert!(stderr.contains("checksum"), "{stderr}");
        assert!(
            stderr.contains(&format!("column `{column}`, row group {group}")),
            "{stderr}"
        );
    }
}

/// Peak resident memory (MiB) and exit code of `analyzer ARGS`, from the operating system.
// The child is reaped by `wait4`, which `std` cannot see.
#[allow(clippy::zombie_processes)]
fn peak_rss(args: &[&str]) -> (f64, i32, String) {
    let child = analyzer()
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4");
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr {
        let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (usage.ru_maxrss as f64 / 1024.0, code, stderr)
}

/// `rows` synthetic events as Parquet in `dir`, and the same rows as zstd text at `name`, each
/// batch's events written by `write`.
fn large_trace(
    dir: &Path,
    rows: u64,
    name: &str,
    mut write: impl FnMut(&[outbox_trace::Event], &mut dyn Write),
) -> (PathBuf, PathBuf, u64) {
    let parquet = dir.join("large.parquet");
    let (rows, _) = outbox_analyzer::model::synth::write(&parquet, rows).expect("synth");
    let text = dir.join(name);
    let trace = outbox_trace::TraceFile::open(&parquet).unwrap();
    let mut z =
        zstd::stream::write::Encoder::new(std::fs::File::create(&text).unwrap(), 1).unwrap();
    let mut unknown = std::collections::BTreeMap::new();
    for batch in trace.batches() {
        write(
            &outbox_trace::batch_events(&batch.unwrap(), &mut unknown),
            &mut z,
        );
    }
    z.finish().unwrap();
    (parquet, text, rows)
}

/// Peak memory (MiB) of `check` on `text` and on `parquet`; both must pass.
fn check_peaks(text: &Path, parquet: &Path) -> (f64, f64) {
    let (text_mib, text_code, text_err) = peak_rss(&["check", text.to_str().unwrap()]);
    let (parquet_mib, parquet_code, _) = peak_rss(&["check", parquet.to_str().unwrap()]);
    assert_eq!(text_code, parquet_code, "{text_err}");
    assert_eq!(text_code, 0, "{text_err}");
    (text_mib, parquet_mib)
}

#[test]
fn a_large_json_lines_trace_is_checked_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    // The rows as zstd JSON Lines (about 60 MB of text).
    let (parquet, jsonl, rows) =
        large_trace(dir.path(), 200_000, "large.jsonl.zst", |events, z| {
            for e in events {
                serde_json::to_writer(&mut *z, e).unwrap();
                z.write_all(b"\n").unwrap();
            }
        });
    let (text_mib, parquet_mib) = check_peaks(&jsonl, &parquet);
    // Streamed a batch at a time, the text costs little more than the Parquet file's check
    // (scripts/bench-check.sh measures the same on 10 million rows).
    eprintln!("{rows} rows: peak {text_mib:.0} MiB as JSON Lines, {parquet_mib:.0} MiB as Parquet");
    assert!(
        text_mib < 2.0 * parquet_mib.max(100.0),
        "JSON Lines peak {text_mib:.0} MiB against Parquet's {parquet_mib:.0} MiB"
    );
}

#[test]
fn a_large_otlp_json_lines_trace_is_checked_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    // The rows as zstd OTLP JSON Lines, as `recorder run --otlp` writes them (about 200 MB of
    // text).
    let (parquet, otlp, rows) =
        large_trace(dir.path(), 300_000, "large.otlp.jsonl.zst", |events, z| {
            outbox_trace::otlp::write::write_to(events, 1_700_000_000_000_000_000, z).unwrap();
        });
    let (otlp_mib, parquet_mib) = check_peaks(&otlp, &parquet);
    // Spilled and merged back a batch at a time, the spans cost little more than the Parquet
    // file's check (89 against 83 MiB in one run here, 95 against 95 in another; with a spill
    // bound four times as large, which this file hardly reaches, the spans peaked at 159 MiB).
    eprintln!(
        "{rows} rows: peak {otlp_mib:.0} MiB as OTLP JSON Lines, {parquet_mib:.0} MiB as Parquet"
    );
    assert!(
        otlp_mib < 1.4 * parquet_mib.max(100.0),
        "OTLP JSON Lines peak {otlp_mib:.0} MiB against Parquet's {parquet_mib:.0} MiB"
    );

    // With nowhere to spill, the file is refused on one line, not mapped short.
    let output = analyzer()
        .args(["check", otlp.to_str().unwrap()])
        .env("TMPDIR", dir.path().join("missing"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("cannot write the span events spilled to a temporary file"),
        "{stderr}"
    );
}

/// `mib` MiB of newlines as gzip: one small member, repeated (a reader takes concatenated
/// members as one stream), after `rows` (gzipped too) when given.
fn gzip_of_newlines(path: &Path, rows: Option<&[u8]>, mib: usize) {
    let gzip = |bytes: &[u8]| {
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(bytes).unwrap();
        z.finish().unwrap()
    };
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    if let Some(rows) = rows {
        file.write_all(&gzip(rows)).unwrap();
    }
    let member = gzip(&vec![b'\n'; 1 << 20]);
    for _ in 0..mib {
        file.write_all(&member).unwrap();
    }
    file.flush().unwrap();
}

#[test]
fn a_gzip_of_newlines_is_bad_input_quickly_and_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let rows = std::fs::read(fixture("etcd_reference.jsonl")).unwrap();
    let otlp_rows = std::fs::read(fixture("etcd_reference.otlp.jsonl")).unwrap();
    // Newlines alone; after rows of JSON Lines; after OTLP JSON Lines: 400 MiB each.
    for (name, rows) in [
        ("newlines.jsonl.gz", None),
        ("rows-then-newlines.jsonl.gz", Some(rows.as_slice())),
        (
            "spans-then-newlines.otlp.jsonl.gz",
            Some(otlp_rows.as_slice()),
        ),
    ] {
        let path = dir.path().join(name);
        gzip_of_newlines(&path, rows, 400);
        assert!(
            std::fs::metadata(&path).unwrap().len() < 4 << 20,
            "a small file"
        );
        let start = Instant::now();
        let (peak_mib, code, stderr) = peak_rss(&["check", path.to_str().unwrap()]);
        let took = start.elapsed();
        assert_eq!(code, 2, "{name}: bad input: {stderr}");
        one_line(stderr.trim());
        assert!(stderr.contains("MAX_BLANK_BYTES"), "{name}: {stderr}");
        assert!(peak_mib < 256.0, "{name}: peak {peak_mib:.0} MiB");
        assert!(took < Duration::from_secs(10), "{name}: took {took:?}");
    }
}

#[test]
fn blank_lines_between_rows_are_read_and_lines_keep_their_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let plain = fixture("etcd_reference.jsonl");
    let text = std::fs::read_to_string(&plain).unwrap();
    // Blank lines (some with spaces, tabs and CR) before, between and after the rows.
    let spaced = dir.path().join("spaced.jsonl");
    let mut out = "\n \n".repeat(500);
    for line in text.lines() {
        out += line;
        out += "\n\n \t\r\n";
    }
    out += &"\n".repeat(1000);
    std::fs::write(&spaced, out).unwrap();
    let (code, stdout, stderr) = check(&[&plain]);
    let (spaced_code, spaced_stdout, spaced_stderr) = check(&[&spaced]);
    assert_eq!((spaced_code, code), (0, 0), "{spaced_stderr}{stderr}");
    assert_eq!(verdicts(&spaced_stdout), verdicts(&stdout));
    assert!(!verdicts(&stdout).is_empty());

    // A bad row after blank lines is named by its own line number.
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        format!("{}\n\n  \n{{not json\n", text.lines().next().unwrap()),
    )
    .unwrap();
    let (code, _, stderr) = check(&[&bad]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("line 4:"), "{stderr}");
}
