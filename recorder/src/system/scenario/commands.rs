//! The commands a scenario runs to their end (setup, quiet, observe) and the environment every
//! command gets.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::shared::SystemError;
use crate::process::child::{Child, Launch, SpawnError, Status};
use crate::system::file::{Export, System};
use crate::system::template::Values;

/// What a role with `export = "async"` gets under everything else: the standard OpenTelemetry
/// batch-processor variables (milliseconds), so its SDK exports each span (and log record) as it
/// ends rather than seconds later, and a kill after a step meets that step's export. A batch of
/// one wakes the export thread at each span's end (the Python, Java, Go, .NET and JavaScript
/// processors all export once their queue holds a batch); the short delay only bounds what slips
/// past that wake-up. The receiver takes no metrics, so the metric interval is short enough for
/// a scenario and no shorter.
pub(crate) const ASYNC_EXPORT_ENV: [(&str, &str); 5] = [
    ("OTEL_BSP_SCHEDULE_DELAY", "10"),
    ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1"),
    ("OTEL_BLRP_SCHEDULE_DELAY", "10"),
    ("OTEL_BLRP_MAX_EXPORT_BATCH_SIZE", "1"),
    ("OTEL_METRIC_EXPORT_INTERVAL", "1000"),
];

/// `layers` merged, lowest precedence first: a later layer's value of a name replaces an earlier
/// one's.
fn layered(layers: impl IntoIterator<Item = Vec<(String, String)>>) -> Vec<(String, String)> {
    let mut env = BTreeMap::new();
    for (k, v) in layers.into_iter().flatten() {
        env.insert(k, v);
    }
    env.into_iter().collect()
}

fn expanded<'t>(
    table: impl IntoIterator<Item = (&'t String, &'t crate::system::template::Template)>,
    values: &Values,
) -> Vec<(String, String)> {
    table
        .into_iter()
        .map(|(k, t)| (k.clone(), t.expand(values)))
        .collect()
}

/// Environment of every command: `[env]` expanded, then `--env`.
pub(super) fn base_env(
    system: &System,
    values: &Values,
    extra: &[(String, String)],
) -> Vec<(String, String)> {
    layered([expanded(&system.file.env, values), extra.to_vec()])
}

/// Environment of a role's process (added to the recorder's own), lowest precedence first:
/// [`ASYNC_EXPORT_ENV`] for an `export = "async"` role, `[env]`, the role's `env`, `--env`, then
/// `own`, the recorder's variables for this life (its receiver, service name, resource
/// attributes, ...), which nothing overrides. `values` are the role's placeholder values.
pub(super) fn role_env(
    system: &System,
    role: &str,
    values: &Values,
    extra: &[(String, String)],
    own: Vec<(String, String)>,
) -> Vec<(String, String)> {
    let spec = &system.file.roles[role];
    let prompt = match spec.export {
        Export::Async => ASYNC_EXPORT_ENV
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        Export::Sync => Vec::new(),
    };
    layered([
        prompt,
        expanded(&system.file.env, values),
        expanded(&spec.env, values),
        extra.to_vec(),
        own,
    ])
}

/// Why a command did not run to its end.
#[derive(Debug, thiserror::Error)]
pub(super) enum CommandError {
    /// It could not start.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// It ran past its bound and was killed.
    #[error("{what} did not finish within {}s and was stopped; {last}", limit.as_secs_f64())]
    TimedOut {
        /// The command (`setup`, `observe`).
        what: String,
        /// Its bound.
        limit: Duration,
        /// Its last output lines.
        last: String,
    },
    /// The run was interrupted while it ran; it was killed.
    #[error("{what} was stopped: the run was interrupted")]
    Interrupted {
        /// The command.
        what: String,
    },
}

impl From<CommandError> for SystemError {
    fn from(e: CommandError) -> Self {
        match e {
            CommandError::Interrupted { .. } => SystemError::Interrupted,
            e => SystemError::Unavailable(e.to_string()),
        }
    }
}

/// Runs a command to its end, at most `limit` and never past `shutdown`, and returns its status,
/// its standard output and its last lines.
pub(super) async fn run_command(
    what: &str,
    argv: &[String],
    env: &[(String, String)],
    cwd: &Path,
    log: PathBuf,
    limit: Duration,
    shutdown: &CancellationToken,
) -> Result<(Status, String, String), CommandError> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut child = Child::spawn(Launch {
        what: what.to_string(),
        argv,
        env,
        cwd,
        log,
        stdin: false,
        watch_stdout: Some(tx),
    })?;
    let status = tokio::select! {
        status = child.wait() => status,
        _ = tokio::time::sleep(limit) => {
            let last = child.last_lines();
            child.kill().await;
            return Err(CommandError::TimedOut { what: what.to_string(), limit, last });
        }
        _ = shutdown.cancelled() => {
            child.kill().await;
            return Err(CommandError::Interrupted { what: what.to_string() });
        }
    };
    let mut out = String::new();
    while let Ok(line) = rx.try_recv() {
        out.push_str(&line);
        out.push('\n');
    }
    Ok((status, out, child.last_lines()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn system(text: &str) -> System {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("system.toml");
        std::fs::write(&path, text).unwrap();
        System::load(&path).unwrap()
    }

    const FILE: &str = r#"
name = "inv"
[env]
OTEL_BSP_SCHEDULE_DELAY = "200"
FROM = "file"
LAYER = "file"
[roles.api]
command = ["python3", "api.py"]
port = true
export = "async"
env = { LAYER = "role", AT = "${port}" }
[roles.worker]
command = ["python3", "worker.py"]
export = "async"
[roles.relay]
command = ["python3", "relay.py"]
[tasks]
command = ["true"]
"#;

    fn get<'e>(env: &'e [(String, String)], name: &str) -> Option<&'e str> {
        env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn an_async_role_gets_prompt_exports_under_the_file_the_role_and_the_command_line() {
        let system = system(FILE);
        let values = Values::from([("port".to_string(), "8080".to_string())]);
        let own = pairs(&[("OTEL_SERVICE_NAME", "api"), ("LAYER", "own")]);
        // The recorder's defaults, then [env] over them.
        let env = role_env(&system, "worker", &values, &[], Vec::new());
        assert_eq!(get(&env, "OTEL_BSP_SCHEDULE_DELAY"), Some("200"));
        assert_eq!(get(&env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"), Some("1"));
        assert_eq!(get(&env, "OTEL_BLRP_SCHEDULE_DELAY"), Some("10"));
        assert_eq!(get(&env, "OTEL_BLRP_MAX_EXPORT_BATCH_SIZE"), Some("1"));
        assert_eq!(get(&env, "OTEL_METRIC_EXPORT_INTERVAL"), Some("1000"));
        assert_eq!(get(&env, "LAYER"), Some("file"));
        // The role's own env over [env], with its placeholders expanded.
        let env = role_env(&system, "api", &values, &[], Vec::new());
        assert_eq!(get(&env, "LAYER"), Some("role"));
        assert_eq!(get(&env, "AT"), Some("8080"));
        assert_eq!(get(&env, "FROM"), Some("file"));
        // --env over the role's env and the defaults.
        let extra = pairs(&[("LAYER", "cli"), ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "512")]);
        let env = role_env(&system, "api", &values, &extra, Vec::new());
        assert_eq!(get(&env, "LAYER"), Some("cli"));
        assert_eq!(get(&env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"), Some("512"));
        // The recorder's own variables over everything.
        let env = role_env(&system, "api", &values, &extra, own);
        assert_eq!(get(&env, "LAYER"), Some("own"));
        assert_eq!(get(&env, "OTEL_SERVICE_NAME"), Some("api"));
        // One value per name.
        let mut names: Vec<&String> = env.iter().map(|(k, _)| k).collect();
        names.dedup();
        assert_eq!(names.len(), env.len());
    }

    #[test]
    fn a_sync_role_and_every_command_get_no_batch_settings() {
        let system = system(&FILE.replace("OTEL_BSP_SCHEDULE_DELAY = \"200\"\n", ""));
        let env = role_env(&system, "relay", &Values::new(), &[], Vec::new());
        for (name, _) in ASYNC_EXPORT_ENV {
            assert_eq!(get(&env, name), None, "{name}");
        }
        let env = base_env(&system, &Values::new(), &pairs(&[("FROM", "cli")]));
        assert_eq!(get(&env, "FROM"), Some("cli"));
        assert_eq!(get(&env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"), None);
    }
}
