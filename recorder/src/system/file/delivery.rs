//! How tasks reach the system: `[tasks]` checked and resolved into a [`Delivery`] (a role's
//! standard input, an HTTP request, or a command).

use super::placeholders::Placeholders;
use super::schema::{CommandLine, HttpSpec, SystemFile};
use crate::system::template::Template;

/// The placeholders a task's line, request or command may use beside the file's own.
const PER_TASK: [&str; 3] = ["task", "aggregate", "amount"];

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

/// Checks `[tasks]` of `file` and says how its tasks are sent.
pub(super) fn delivery(file: &SystemFile, placeholders: &Placeholders) -> Result<Delivery, String> {
    let t = &file.tasks;
    if t.aggregates == 0 {
        return Err("tasks.aggregates must be at least 1".into());
    }
    if t.count == 0 {
        return Err("tasks.count must be at least 1".into());
    }
    let delivery = match (&t.stdin, &t.http, &t.command) {
        (Some(role), None, None) => by_stdin(file, role, placeholders)?,
        (None, Some(http), None) => by_http(http, placeholders)?,
        (None, None, Some(command)) => {
            if command.is_empty() {
                return Err("tasks.command is empty".into());
            }
            placeholders.check("tasks.command", command.iter(), &PER_TASK)?;
            Delivery::Command(command.clone())
        }
        _ => return Err(
            "[tasks] needs exactly one of stdin = ROLE (with line), http = {...}, command = [...]"
                .into(),
        ),
    };
    if t.line.is_some() && t.stdin.is_none() {
        return Err("tasks.line is used only with tasks.stdin".into());
    }
    Ok(delivery)
}

/// `tasks.stdin = ROLE` with its `tasks.line`: a role of one instance, a line per task.
fn by_stdin(
    file: &SystemFile,
    role: &str,
    placeholders: &Placeholders,
) -> Result<Delivery, String> {
    let Some(spec) = file.roles.get(role) else {
        return Err(format!("tasks.stdin = \"{role}\": no role of that name"));
    };
    if spec.instances != 1 {
        return Err(format!(
            "tasks.stdin = \"{role}\": the role must have one instance"
        ));
    }
    let Some(line) = &file.tasks.line else {
        return Err("tasks.stdin needs tasks.line, the line written per task".into());
    };
    placeholders.check("tasks.line", std::iter::once(line), &PER_TASK)?;
    Ok(Delivery::Stdin {
        role: role.to_string(),
        line: line.clone(),
    })
}

/// `tasks.http`: its URL, body and headers' placeholders, and its method.
fn by_http(http: &HttpSpec, placeholders: &Placeholders) -> Result<Delivery, String> {
    let all = std::iter::once(&http.url)
        .chain(http.body.iter())
        .chain(http.headers.values());
    placeholders.check("tasks.http", all, &PER_TASK)?;
    http.method
        .parse::<axum::http::Method>()
        .map_err(|_| format!("tasks.http.method `{}` is no HTTP method", http.method))?;
    Ok(Delivery::Http(http.clone()))
}
