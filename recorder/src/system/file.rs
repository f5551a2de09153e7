//! The system file (`recorder run --system FILE`): a user's own services, the processes of its
//! roles, how tasks reach it, how to tell it is quiet and how to read its stores back. Read once,
//! with every key, placeholder and fault checked, so a bad file fails before anything starts.
//!
//! The tables and keys the file may hold, as they are read, are `schema`'s; `check` checks them
//! table by table, with the placeholders each place knows (`placeholders`), how tasks are sent
//! (`delivery`) and the faults found in the file (`faults`); this file reads it and holds the
//! resolved system.

use std::path::{Path, PathBuf};

use crate::fault::spec::Nemesis;
use crate::system::steps::Steps;

mod check;
mod delivery;
mod faults;
mod placeholders;
mod schema;

pub use check::MAX_INSTANCES;
pub use delivery::Delivery;
pub use faults::role_of;
pub use schema::{
    CommandLine, CommandSpec, Export, HttpSpec, OtlpProtocol, Ready, RoleSpec, ScenarioSpec,
    ServiceSpec, SystemFile, TasksSpec,
};

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
    /// The steps read from the wire (none without `[steps]`).
    pub steps: Steps,
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
        let checked = check::check(&file).map_err(|m| fail(None, m))?;
        Ok(System {
            file,
            root,
            delivery: checked.delivery,
            scenarios: checked.scenarios,
            steps: checked.steps,
        })
    }

    /// Parses one fault spec and checks its role or service against the file.
    pub fn fault(&self, text: &str) -> Result<Nemesis, String> {
        faults::check_fault(text, &self.file)
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
            lossy: self.lossy(),
        }
    }

    /// Its services whose protocol the proxy reads, each with every reply it can lose.
    pub fn lossy(&self) -> Vec<(String, &'static crate::fault::protocols::Reads)> {
        self.file
            .services
            .iter()
            .flat_map(|(name, spec)| spec.wire.offers().map(|row| (name.clone(), row)))
            .collect()
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
