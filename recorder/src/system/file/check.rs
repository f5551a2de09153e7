//! The checks of a system file once it parses, one per table: `[roles.*]`, `[services.*]`, the
//! environment, the placeholders of every command, `[setup]`/`[reset]`/`[quiet]`/`[observe]`,
//! `counter_start`, `[tasks]` and `[[scenarios]]`, in that order (the first problem found is the
//! one reported).

use std::collections::BTreeSet;

use super::delivery::{delivery, Delivery};
use super::faults::check_fault;
use super::placeholders::Placeholders;
use super::schema::{Ready, SystemFile};
use crate::fault::spec::Nemesis;
use crate::system::steps::Steps;
use crate::system::template::Template;

/// The most instances one role may have: each is a process of its own, with its own receiver
/// endpoint and files open.
pub const MAX_INSTANCES: u32 = 64;

/// Names the recorder writes rows under, which a role cannot take.
const RESERVED: [&str; 3] = ["recorder", "observer", "faults"];

/// What checking a file resolves.
pub(super) struct Checked {
    /// How tasks are sent.
    pub(super) delivery: Delivery,
    /// The named scenarios with their faults parsed (one `default` without faults if none).
    pub(super) scenarios: Vec<(String, Vec<Nemesis>)>,
    /// The steps read from the wire.
    pub(super) steps: Steps,
}

/// Checks every table of `file`; the first problem found is the error.
pub(super) fn check(file: &SystemFile) -> Result<Checked, String> {
    if file.name.trim().is_empty() {
        return Err("`name` is empty".into());
    }
    roles(file)?;
    services(file)?;
    environment(file)?;
    let placeholders = Placeholders::of(file);
    service_and_env_placeholders(file, &placeholders)?;
    commands(file, &placeholders)?;
    role_placeholders(file, &placeholders)?;
    if let Some(start) = &file.counter_start {
        counter_start(start)?;
    }
    let delivery = delivery(file, &placeholders)?;
    let scenarios = scenarios(file)?;
    let steps = Steps::check(&file.steps, &file.services)?;
    Ok(Checked {
        delivery,
        scenarios,
        steps,
    })
}

/// A role's or service's name: letters, digits, `_` and `-`, not ending in `-<number>` (an
/// instance's name), and not one the recorder writes rows under.
fn name_word(what: &str, name: &str) -> Result<(), String> {
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
}

/// `[roles.*]`: at least one, each named well, with a program and 1 to [`MAX_INSTANCES`]
/// instances.
fn roles(file: &SystemFile) -> Result<(), String> {
    if file.roles.is_empty() {
        return Err("no [roles.NAME] table: a system needs at least one role".into());
    }
    for (name, role) in &file.roles {
        name_word("role", name)?;
        program(&format!("roles.{name}.command"), &role.command)?;
        if role.instances == 0 || role.instances > MAX_INSTANCES {
            return Err(format!(
                "roles.{name}.instances must be 1 to {MAX_INSTANCES} (it is {})",
                role.instances
            ));
        }
    }
    Ok(())
}

/// `[services.*]`: each named well, with a program.
fn services(file: &SystemFile) -> Result<(), String> {
    for (name, service) in &file.services {
        name_word("service", name)?;
        program(&format!("services.{name}.command"), &service.command)?;
    }
    Ok(())
}

/// `[env]` and each `roles.*.env`: keys without `=` or NUL bytes, values without NUL bytes.
fn environment(file: &SystemFile) -> Result<(), String> {
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
    Ok(())
}

/// The placeholders of each service's command and ready check (which know their own `port`),
/// then of `[env]`'s values.
fn service_and_env_placeholders(
    file: &SystemFile,
    placeholders: &Placeholders,
) -> Result<(), String> {
    for (name, s) in &file.services {
        placeholders.check(&format!("services.{name}.command"), &s.command, &["port"])?;
        if let Ready::Command(c) = &s.ready {
            placeholders.check(&format!("services.{name}.ready"), c, &["port"])?;
        }
    }
    for (key, value) in &file.env {
        placeholders.check(&format!("env.{key}"), std::iter::once(value), &[])?;
    }
    Ok(())
}

/// `[setup]`, `[reset]`, `[quiet]` and `[observe]`: a program, and known placeholders.
fn commands(file: &SystemFile, placeholders: &Placeholders) -> Result<(), String> {
    for (place, spec) in [
        ("setup", &file.setup),
        ("reset", &file.reset),
        ("quiet", &file.quiet),
        ("observe", &file.observe),
    ] {
        if let Some(spec) = spec {
            program(&format!("{place}.command"), &spec.command)?;
            placeholders.check(&format!("{place}.command"), &spec.command, &[])?;
        }
    }
    Ok(())
}

/// The placeholders of each role's command and environment (which know the role's own `port`
/// when it has one).
fn role_placeholders(file: &SystemFile, placeholders: &Placeholders) -> Result<(), String> {
    for (name, role) in &file.roles {
        let own: &[&str] = if role.port { &["port"] } else { &[] };
        placeholders.check(&format!("roles.{name}.command"), &role.command, own)?;
        for (key, value) in &role.env {
            placeholders.check(
                &format!("roles.{name}.env.{key}"),
                std::iter::once(value),
                own,
            )?;
        }
    }
    Ok(())
}

/// `[[scenarios]]`: unique names other than `all`, each fault checked against the file; one
/// `default` scenario without faults when there is none.
fn scenarios(file: &SystemFile) -> Result<Vec<(String, Vec<Nemesis>)>, String> {
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
            .map(|f| check_fault(f, file))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("scenario `{}`: {e}", s.name))?;
        scenarios.push((s.name.clone(), faults));
    }
    if scenarios.is_empty() {
        scenarios.push(("default".to_string(), Vec::new()));
    }
    Ok(scenarios)
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

/// `counter_start` is an integer (a number or a decimal string) or a table of them by counter key.
fn counter_start(start: &serde_json::Value) -> Result<(), String> {
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
