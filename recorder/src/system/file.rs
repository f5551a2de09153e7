//! The system file (`recorder run --system FILE`): a user's own services, the processes of its
//! roles, how tasks reach it, how to tell it is quiet and how to read its stores back. Read once,
//! with every key, placeholder and fault checked, so a bad file fails before anything starts.
//!
//! The tables and keys the file may hold, as they are read, are `schema`'s; this file checks
//! them and resolves the system: roles, services, placeholders, delivery and faults.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::template::Template;
use crate::fault::spec::{Nemesis, What, WireFault};
use crate::wire::protocol::Wire;

mod schema;

pub use schema::{
    CommandLine, CommandSpec, Export, HttpSpec, OtlpProtocol, Ready, RoleSpec, ScenarioSpec,
    ServiceSpec, SystemFile, TasksSpec,
};

/// The most instances one role may have: each is a process of its own, with its own receiver
/// endpoint and files open.
pub const MAX_INSTANCES: u32 = 64;

/// The largest system file read: a real one is a few kilobytes.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The file's text, read up to [`MAX_FILE_BYTES`] (a larger file, or an endless one, is refused).
fn read_bounded(path: &Path) -> Result<String, String> {
    use std::io::Read as _;
    let cannot = |e: std::io::Error| format!("cannot read the system file: {e}");
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "the system file is larger than {} KiB: not a system file",
            MAX_FILE_BYTES / 1024
        ));
    }
    String::from_utf8(bytes).map_err(|_| "the system file is not UTF-8 text".to_string())
}

/// Names the recorder writes rows under, which a role cannot take.
const RESERVED: [&str; 3] = ["recorder", "observer", "faults"];

/// A system file that cannot be used: one line, naming the file (and the line where known).
#[derive(Debug, thiserror::Error)]
#[error("{path}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct SystemFileError {
    /// The file.
    pub path: String,
    /// The line the problem is on, where known.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

/// How a task is sent, resolved from `[tasks]`.
#[derive(Debug, Clone)]
pub enum Delivery {
    /// Lines on a role's standard input; answered when a line of its output holds the task id.
    Stdin {
        /// The role.
        role: String,
        /// The line.
        line: Template,
    },
    /// An HTTP request; answered by a 2xx.
    Http(HttpSpec),
    /// A command; answered by exit status 0.
    Command(CommandLine),
}

/// A system file read and checked.
#[derive(Debug, Clone)]
pub struct System {
    /// What the file says.
    pub file: SystemFile,
    /// The file's directory: every command's working directory.
    pub root: PathBuf,
    /// How tasks are sent.
    pub delivery: Delivery,
    /// The named scenarios with their faults parsed (one `default` without faults if none).
    pub scenarios: Vec<(String, Vec<Nemesis>)>,
}

/// Placeholder names every command and the environment may use.
fn global_names(file: &SystemFile) -> BTreeSet<String> {
    let mut names = BTreeSet::from(["dir".to_string()]);
    for s in file.services.keys() {
        names.insert(format!("services.{s}.port"));
        names.insert(format!("services.{s}.real_port"));
        names.insert(format!("services.{s}.dir"));
    }
    for (r, spec) in &file.roles {
        if spec.port {
            names.insert(format!("roles.{r}.port"));
        }
    }
    names
}

impl System {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<System, SystemFileError> {
        let shown = path.display().to_string();
        let fail = |line: Option<usize>, message: String| SystemFileError {
            path: shown.clone(),
            line,
            message,
        };
        let text = read_bounded(path).map_err(|m| fail(None, m))?;
        let file: SystemFile = toml::from_str(&text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
            fail(line, e.message().trim().replace('\n', "; "))
        })?;
        let root = path
            .canonicalize()
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| PathBuf::from("."));
        Self::check(file, root).map_err(|m| fail(None, m))
    }

    fn check(file: SystemFile, root: PathBuf) -> Result<System, String> {
        let word = |what: &str, name: &str| -> Result<(), String> {
            let ok = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'));
            let numbered = name
                .rsplit_once('-')
                .is_some_and(|(_, n)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
            if !ok || numbered || RESERVED.contains(&name) {
                return Err(format!(
                    "{what} name `{name}`: use letters, digits, `_` and `-`, not ending in `-<number>`, \
                     and none of {}",
                    RESERVED.join(", ")
                ));
            }
            Ok(())
        };
        if file.name.trim().is_empty() {
            return Err("`name` is empty".into());
        }
        if file.roles.is_empty() {
            return Err("no [roles.NAME] table: a system needs at least one role".into());
        }
        for (name, role) in &file.roles {
            word("role", name)?;
            program(&format!("roles.{name}.command"), &role.command)?;
            if role.instances == 0 || role.instances > MAX_INSTANCES {
                return Err(format!(
                    "roles.{name}.instances must be 1 to {MAX_INSTANCES} (it is {})",
                    role.instances
                ));
            }
        }
        for (name, service) in &file.services {
            word("service", name)?;
            program(&format!("services.{name}.command"), &service.command)?;
        }
        let roles_env = file.roles.iter().flat_map(|(r, spec)| {
            spec.env
                .iter()
                .map(move |kv| (format!("roles.{r}.env"), kv))
        });
        for (table, (key, value)) in file
            .env
            .iter()
            .map(|kv| ("env".to_string(), kv))
            .chain(roles_env)
        {
            if key.is_empty() || key.contains('=') || key.contains('\0') {
                return Err(format!(
                    "{table} key `{key}`: a name without `=` or NUL bytes"
                ));
            }
            if value.has_nul() {
                return Err(format!("{table}.{key}: a value cannot hold a NUL byte"));
            }
        }
        let global = global_names(&file);
        let check =
            |place: &str, templates: &mut dyn Iterator<Item = &Template>, extra: &[&str]| {
                for t in templates {
                    if let Some(name) = t.unknown(|n| global.contains(n) || extra.contains(&n)) {
                        let mut known: Vec<&str> = global.iter().map(String::as_str).collect();
                        known.extend(extra);
                        return Err(format!(
                            "{place}: unknown placeholder `${{{name}}}` (known here: {})",
                            known.join(", ")
                        ));
                    }
                }
                Ok(())
            };
        for (name, s) in &file.services {
            check(
                &format!("services.{name}.command"),
                &mut s.command.iter(),
                &["port"],
            )?;
            if let Ready::Command(c) = &s.ready {
                check(&format!("services.{name}.ready"), &mut c.iter(), &["port"])?;
            }
        }
        for (key, value) in &file.env {
            check(&format!("env.{key}"), &mut std::iter::once(value), &[])?;
        }
        for (place, spec) in [
            ("setup", &file.setup),
            ("reset", &file.reset),
            ("quiet", &file.quiet),
            ("observe", &file.observe),
        ] {
            if let Some(spec) = spec {
                program(&format!("{place}.command"), &spec.command)?;
                check(&format!("{place}.command"), &mut spec.command.iter(), &[])?;
            }
        }
        for (name, role) in &file.roles {
            let own: &[&str] = if role.port { &["port"] } else { &[] };
            check(
                &format!("roles.{name}.command"),
                &mut role.command.iter(),
                own,
            )?;
            for (key, value) in &role.env {
                check(
                    &format!("roles.{name}.env.{key}"),
                    &mut std::iter::once(value),
                    own,
                )?;
            }
        }
        if let Some(start) = &file.counter_start {
            check_counter_start(start)?;
        }
        let per_task = ["task", "aggregate", "amount"];
        let t = &file.tasks;
        if t.aggregates == 0 {
            return Err("tasks.aggregates must be at least 1".into());
        }
        if t.count == 0 {
            return Err("tasks.count must be at least 1".into());
        }
        let delivery = match (&t.stdin, &t.http, &t.command) {
            (Some(role), None, None) => {
                let Some(spec) = file.roles.get(role) else {
                    return Err(format!("tasks.stdin = \"{role}\": no role of that name"));
                };
                if spec.instances != 1 {
                    return Err(format!(
                        "tasks.stdin = \"{role}\": the role must have one instance"
                    ));
                }
                let Some(line) = &t.line else {
                    return Err("tasks.stdin needs tasks.line, the line written per task".into());
                };
                check("tasks.line", &mut std::iter::once(line), &per_task)?;
                Delivery::Stdin {
                    role: role.clone(),
                    line: line.clone(),
                }
            }
            (None, Some(http), None) => {
                let mut all = std::iter::once(&http.url)
                    .chain(http.body.iter())
                    .chain(http.headers.values());
                check("tasks.http", &mut all, &per_task)?;
                http.method
                    .parse::<axum::http::Method>()
                    .map_err(|_| format!("tasks.http.method `{}` is no HTTP method", http.method))?;
                Delivery::Http(http.clone())
            }
            (None, None, Some(command)) => {
                if command.is_empty() {
                    return Err("tasks.command is empty".into());
                }
                check("tasks.command", &mut command.iter(), &per_task)?;
                Delivery::Command(command.clone())
            }
            _ => {
                return Err(
                    "[tasks] needs exactly one of stdin = ROLE (with line), http = {...}, command = [...]"
                        .into(),
                )
            }
        };
        if t.line.is_some() && t.stdin.is_none() {
            return Err("tasks.line is used only with tasks.stdin".into());
        }
        let mut scenarios = Vec::new();
        let mut seen = BTreeSet::new();
        for s in &file.scenarios {
            if s.name.is_empty() || s.name == "all" || !seen.insert(s.name.clone()) {
                return Err(format!(
                    "scenario name `{}`: names must be non-empty, unique and not `all`",
                    s.name
                ));
            }
            let faults = s
                .faults
                .iter()
                .map(|f| check_fault(f, &file))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("scenario `{}`: {e}", s.name))?;
            scenarios.push((s.name.clone(), faults));
        }
        if scenarios.is_empty() {
            scenarios.push(("default".to_string(), Vec::new()));
        }
        Ok(System {
            file,
            root,
            delivery,
            scenarios,
        })
    }

    /// Parses one fault spec and checks its role or service against the file.
    pub fn fault(&self, text: &str) -> Result<Nemesis, String> {
        check_fault(text, &self.file)
    }

    /// What the system offers a chaos draw: its roles and instances, its declared kinds, its
    /// services.
    pub fn layout(&self) -> crate::fault::chaos::Layout {
        crate::fault::chaos::Layout {
            roles: self
                .file
                .roles
                .iter()
                .map(|(name, role)| (name.clone(), role.instances))
                .collect(),
            records: self.file.records.clone(),
            services: self.file.services.keys().cloned().collect(),
        }
    }

    /// The actor names of a role's instances: `worker`, `worker-2`, ...
    pub fn actors(&self, role: &str) -> Vec<String> {
        let n = self.file.roles.get(role).map_or(0, |r| r.instances);
        (1..=n)
            .map(|i| {
                if i == 1 {
                    role.to_string()
                } else {
                    format!("{role}-{i}")
                }
            })
            .collect()
    }

    /// Every actor, role by role.
    pub fn all_actors(&self) -> Vec<(String, String)> {
        self.file
            .roles
            .keys()
            .flat_map(|r| self.actors(r).into_iter().map(move |a| (r.clone(), a)))
            .collect()
    }
}

/// A command whose program is named: not empty, and no word holding a NUL byte.
fn program(place: &str, command: &[Template]) -> Result<(), String> {
    match command.first() {
        None => Err(format!("{place} is empty")),
        Some(first) if first.is_blank() => Err(format!("{place}: the program is empty")),
        Some(_) if command.iter().any(Template::has_nul) => {
            Err(format!("{place}: a word holds a NUL byte"))
        }
        Some(_) => Ok(()),
    }
}

/// Parses one fault spec and checks its role or service against `file`.
fn check_fault(text: &str, file: &SystemFile) -> Result<Nemesis, String> {
    let spec = Nemesis::parse(text)?
        .resolve(|name| file.services.contains_key(name))
        .map_err(|e| format!("fault `{text}`: {e}"))?;
    if let Some(by) = spec.reporter() {
        if role_of(by, file).is_none() {
            return Err(format!(
                "fault `{text}`: no role or instance `{by}` (roles: {})",
                names(file.roles.keys())
            ));
        }
    }
    if let Some(service) = spec.service() {
        let Some(declared) = file.services.get(service) else {
            return Err(format!(
                "fault `{text}`: no service `{service}` (services: {})",
                names(file.services.keys())
            ));
        };
        let needs = match spec.what {
            What::Wire {
                fault: WireFault::LoseCommitReply,
                ..
            } => Some(Wire::Postgres),
            What::Wire {
                fault: WireFault::LosePuback,
                ..
            } => Some(Wire::Nats),
            _ => None,
        };
        if let Some(needs) = needs.filter(|&w| w != declared.wire) {
            return Err(format!(
                "fault `{text}`: the proxy reads this fault's reply in {} messages: give \
                 [services.{service}] wire = \"{}\" (it says \"{}\")",
                needs.as_str(),
                needs.as_str(),
                declared.wire.as_str()
            ));
        }
    }
    match spec.target() {
        Some(target) if role_of(target, file).is_none() => Err(format!(
            "fault `{text}`: no role or instance `{target}` (roles: {})",
            names(file.roles.keys())
        )),
        _ => Ok(spec),
    }
}

/// The role an actor or role name belongs to in `file`: `worker-2` is `worker`'s second instance.
pub fn role_of<'a>(target: &'a str, file: &SystemFile) -> Option<&'a str> {
    if file.roles.contains_key(target) {
        return Some(target);
    }
    let (role, n) = target.rsplit_once('-')?;
    let n: u32 = n.parse().ok()?;
    let spec = file.roles.get(role)?;
    (n >= 2 && n <= spec.instances).then_some(role)
}

fn names<'a>(it: impl Iterator<Item = &'a String>) -> String {
    let v: Vec<&str> = it.map(String::as_str).collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// `counter_start` is an integer (a number or a decimal string) or a table of them by counter key.
fn check_counter_start(start: &serde_json::Value) -> Result<(), String> {
    let integer = |v: &serde_json::Value| match v {
        serde_json::Value::Number(n) => n.is_i64() || n.is_u64(),
        serde_json::Value::String(s) => s.trim().parse::<i64>().is_ok(),
        _ => false,
    };
    let ok = match start {
        serde_json::Value::Object(by_key) => by_key.values().all(integer),
        one => integer(one),
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "counter_start = {start}: an integer, or a table of integers by counter key"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<System, SystemFileError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("system.toml");
        std::fs::write(&path, text).unwrap();
        System::load(&path)
    }

    const MINIMAL: &str = r#"
name = "inv"
[services.redis]
command = ["redis-server", "--port", "${port}", "--dir", "${dir}"]
[env]
REDIS_URL = "redis://127.0.0.1:${services.redis.port}/0"
[roles.api]
command = ["python3", "api.py"]
port = true
[roles.worker]
command = ["python3", "worker.py"]
instances = 2
[tasks]
http = { url = "http://127.0.0.1:${roles.api.port}/t", body = '{"id": "${task}"}' }
"#;

    #[test]
    fn a_minimal_file_reads_with_its_defaults() {
        let s = load(MINIMAL).unwrap();
        assert_eq!(s.file.tasks.count, 40);
        assert_eq!(s.file.tasks.aggregates, 4);
        assert_eq!(s.scenarios.len(), 1);
        assert_eq!(s.scenarios[0].0, "default");
        assert_eq!(s.actors("worker"), ["worker", "worker-2"]);
        assert!(matches!(s.delivery, Delivery::Http(_)));
    }

    #[test]
    fn an_unknown_key_names_its_line() {
        let e = load(&format!("{MINIMAL}\n[roles.relay]\ncomand = [\"x\"]\n")).unwrap_err();
        assert!(e.line.is_some(), "{e}");
        assert!(e.to_string().contains("comand"), "{e}");
    }

    #[test]
    fn an_unknown_placeholder_is_named() {
        let e =
            load(&MINIMAL.replace("${services.redis.port}", "${services.rdis.port}")).unwrap_err();
        assert!(e.to_string().contains("${services.rdis.port}"), "{e}");
        let e = load(&MINIMAL.replace("${task}", "${taks}")).unwrap_err();
        assert!(e.to_string().contains("${taks}"), "{e}");
    }

    #[test]
    fn a_roles_env_is_checked_like_the_files() {
        let role_env = |env: &str| {
            load(&MINIMAL.replace(
                "port = true\n",
                &format!("port = true\nenv = {{ {env} }}\n"),
            ))
        };
        let s = role_env(r#"AT = "${port}", URL = "${services.redis.port}""#).unwrap();
        assert_eq!(s.file.roles["api"].env.len(), 2);
        let e = role_env(r#"AT = "${prot}""#).unwrap_err();
        assert!(e.to_string().contains("roles.api.env.AT"), "{e}");
        let e = role_env(r#""A=B" = "x""#).unwrap_err();
        assert!(e.to_string().contains("roles.api.env key `A=B`"), "{e}");
    }

    #[test]
    fn tasks_need_exactly_one_way_in_and_reserved_names_are_refused() {
        let e = load(&MINIMAL.replace("[tasks]\n", "[tasks]\ncommand = [\"x\"]\n")).unwrap_err();
        assert!(e.to_string().contains("exactly one"), "{e}");
        let e = load(&MINIMAL.replace("[roles.worker]", "[roles.observer]")).unwrap_err();
        assert!(e.to_string().contains("observer"), "{e}");
        let e = load(&MINIMAL.replace("[roles.worker]", "[roles.worker-3]")).unwrap_err();
        assert!(e.to_string().contains("worker-3"), "{e}");
    }

    #[test]
    fn a_fault_that_reads_a_protocol_needs_the_service_to_declare_it() {
        let with = |wire: &str, fault: &str| {
            let text = MINIMAL.replace(
                "\"${dir}\"]\n",
                &format!("\"${{dir}}\"]\nwire = \"{wire}\"\n"),
            );
            load(&format!(
                "{text}\n[[scenarios]]\nname = \"s\"\nfaults = [\"{fault}\"]\n"
            ))
        };
        let e = with("tcp", "lose commit-reply worker redis after delivered").unwrap_err();
        assert!(e.to_string().contains("wire = \"postgres\""), "{e}");
        let e = with("redis", "lose puback worker redis after delivered").unwrap_err();
        assert!(e.to_string().contains("wire = \"nats\""), "{e}");
        assert!(with("postgres", "lose commit-reply worker redis after delivered").is_ok());
        assert!(with("nats", "lose puback worker redis after delivered 2").is_ok());
        let e = with("smtp", "cut worker redis after delivered").unwrap_err();
        assert!(e.to_string().contains("smtp"), "{e}");
    }
}
