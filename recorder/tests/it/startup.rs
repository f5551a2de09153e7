//! What any team's stack needs to start under the recorder: a scenario directory short enough
//! for a Unix socket whatever the schedule is called (PostgreSQL with `-k "$dir"`), ports that
//! two recorders at once never share and that lie below the kernel's ephemeral range, and a
//! schedule whose service cannot start being a result of the search (`could not run`, exit 3),
//! not its end.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use outbox_trace::{read_trace, Kind};

use crate::common::{output_text, run_end};

/// How many ports each of the two processes reserves.
const PORTS_EACH: usize = 300;

/// Run by `ports_from_two_processes_never_collide` in processes of its own: reserves ports,
/// prints them, and holds them until its standard input closes. Alone, it does nothing.
#[test]
fn ports_child_process() {
    if std::env::var_os("OUTBOX_PORTS_CHILD").is_none() {
        return;
    }
    let held: Vec<_> = (0..PORTS_EACH)
        .map(|_| outbox_recorder::process::port::reserve().unwrap())
        .collect();
    for r in &held {
        println!("port {}", r.port());
    }
    println!("held");
    let _ = std::io::stdin().lines().count();
}

#[test]
fn ports_from_two_processes_never_collide() {
    let spawn = || {
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "startup::ports_child_process", "--nocapture"])
            .env("OUTBOX_PORTS_CHILD", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut children = [spawn(), spawn()];
    let mut ports = Vec::new();
    let mut outs = Vec::new();
    for child in &mut children {
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut mine = Vec::new();
        for line in (&mut out).lines() {
            let line = line.unwrap();
            if line == "held" {
                break;
            }
            if let Some(p) = line.strip_prefix("port ") {
                mine.push(p.parse::<u16>().unwrap());
            }
        }
        assert_eq!(mine.len(), PORTS_EACH);
        ports.extend(mine);
        outs.push(out);
    }
    let distinct: std::collections::BTreeSet<u16> = ports.iter().copied().collect();
    assert_eq!(distinct.len(), 2 * PORTS_EACH, "no port reserved twice");
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap();
    let low: u16 = range.split_whitespace().next().unwrap().parse().unwrap();
    assert!(ports.iter().all(|p| *p < low), "all below {low}");
    for (mut child, out) in children.into_iter().zip(outs) {
        drop(child.stdin.take());
        let _ = std::io::read_to_string(out.into_inner());
        assert!(child.wait().unwrap().success());
    }
}

/// A system whose PostgreSQL keeps its Unix socket in its own directory (`-k "$dir"`), its tasks
/// reaching it through that socket.
fn postgres_system(dir: &Path, scenario: &str) -> std::path::PathBuf {
    let serve = dir.join("pg-serve.sh");
    std::fs::write(
        &serve,
        r#"#!/bin/sh
dir=$1; port=$2
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
as_user=
if [ "$(id -u)" = 0 ]; then
    chown postgres "$dir"
    up=$dir
    while [ "$up" != / ]; do chmod o+x "$up"; up=$(dirname "$up"); done
    as_user="runuser -u postgres --"
fi
$as_user "$bin/initdb" -D "$dir/data" -U outbox --auth=trust --no-sync >"$dir/initdb.log" 2>&1 || exit 1
exec $as_user "$bin/postgres" -D "$dir/data" -k "$dir" -p "$port" -c listen_addresses=''
"#,
    )
    .unwrap();
    let serve = serve.display();
    let file = dir.join("system.toml");
    std::fs::write(
        &file,
        format!(
            r#"name = "pg-socket"
[services.pg]
command = ["sh", "{serve}", "${{dir}}", "${{port}}"]
ready = ["pg_isready", "-q", "-h", "${{dir}}", "-p", "${{port}}", "-U", "outbox", "-d", "postgres"]
[roles.app]
command = ["sleep", "30"]
[tasks]
command = ["psql", "-h", "${{services.pg.dir}}", "-p", "${{services.pg.port}}", "-U", "outbox", "-d", "postgres", "-c", "select 1"]
count = 2
[[scenarios]]
name = "{scenario}"
faults = []
"#
        ),
    )
    .unwrap();
    file
}

#[test]
fn postgres_with_its_socket_in_dir_starts_whatever_the_schedule_is_called() {
    let dir = tempfile::tempdir().unwrap();
    let long = format!(
        "pause-worker-after-delivered-91ms-for-5s-unless-alone-{}",
        "x".repeat(60)
    );
    let file = postgres_system(dir.path(), &long);
    let out = dir.path().join("run.parquet");
    let output = Command::new(assert_cmd::cargo::cargo_bin("recorder"))
        .args(["run", "--quiet", "--system"])
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .args(["--scenario", &long])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", output_text(&output));
    let events = read_trace(&out).unwrap().events;
    let end = events.iter().find(|e| e.kind == Kind::RunEnd).unwrap();
    assert_eq!(end.scenario, long, "the trace keeps the schedule's name");
    assert_eq!(
        run_end(end).tasks_answered,
        Some(2),
        "both tasks reached the socket"
    );
}

/// A `redis-server` in front of the real one that refuses to start in the scenario whose name
/// (in `scenario.txt`, two levels above its `--dir`) holds `word`.
fn refusing_redis(dir: &Path, word: &str) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let wrapper = bin.join("redis-server");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nif grep -q '{word}' \"$6/../../scenario.txt\"; then echo 'refusing this schedule' >&2; exit 1; fi\nexec /usr/bin/redis-server \"$@\"\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!("PATH={}:{}", bin.display(), std::env::var("PATH").unwrap())
}

/// A copy of the Python example in `dir` without its `[reset]`: each schedule starts its own
/// services, as a system that names no reset does.
fn python_example_without_reset(dir: &Path) -> std::path::PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/otel-python");
    let to = dir.join("otel-python");
    std::fs::create_dir_all(&to).unwrap();
    for entry in std::fs::read_dir(&from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
    let file = to.join("outbox-system.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    let without = text.replace(
        "[reset]\ncommand = [\"redis-cli\", \"-p\", \"${services.redis.port}\", \"flushall\"]\n",
        "",
    );
    assert_ne!(
        without, text,
        "the example's [reset] is where this copy expects it"
    );
    std::fs::write(&file, without).unwrap();
    file
}

#[test]
fn a_schedule_whose_service_cannot_start_could_not_run_and_the_search_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = refusing_redis(dir.path(), "after-effect_committed");
    let example = python_example_without_reset(dir.path());
    let json = dir.path().join("search.json");
    let junit = dir.path().join("search.xml");
    let out = dir.path().join("explore.parquet");
    let output = Command::new(assert_cmd::cargo::cargo_bin("recorder"))
        .args(["explore", "--system"])
        .arg(example)
        .arg("--out")
        .arg(&out)
        .args(["--tasks", "6", "--only", "kill worker", "--env", &path])
        .arg("--json")
        .arg(&json)
        .arg("--junit")
        .arg(&junit)
        .output()
        .unwrap();
    let text = output_text(&output);
    assert_eq!(output.status.code(), Some(3), "{text}");
    assert!(text.contains("could not run"), "{text}");
    let search: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let schedules = search["schedules"].as_array().unwrap();
    let (could_not, ran): (Vec<_>, Vec<_>) = schedules
        .iter()
        .partition(|s| s["verdict"] == "could not run");
    assert!(
        !could_not.is_empty() && could_not.len() < ran.len(),
        "{search}"
    );
    assert!(ran.iter().all(|s| s["verdict"] == "valid"), "{search}");
    for s in &could_not {
        assert!(
            s["fault"].as_str().unwrap().contains("effect_committed"),
            "{s}"
        );
        assert!(s["why"].as_str().unwrap().contains("redis"), "{s}");
    }
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("<error message=\"could not run: "), "{xml}");
    let events = read_trace(&out).unwrap().events;
    let name = could_not[0]["scenario"].as_str().unwrap();
    let mine: Vec<_> = events.iter().filter(|e| e.scenario == name).collect();
    let kinds: Vec<Kind> = mine.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [Kind::RunStart, Kind::RunEnd], "{name}");
    let end = run_end(mine[1]);
    assert!(end.reason.unwrap().starts_with("could not run: "));
    assert_eq!(end.recovered, Some(false));
}
