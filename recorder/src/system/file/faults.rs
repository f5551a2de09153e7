//! A system file's faults checked against it: each spec parsed, and the roles, instances and
//! services it names found in the file (with the protocol a wire fault reads).

use super::schema::SystemFile;
use crate::fault::spec::{Nemesis, What};

/// Parses one fault spec and checks its role or service against `file`.
pub(super) fn check_fault(text: &str, file: &SystemFile) -> Result<Nemesis, String> {
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
        check_service(text, &spec, service, file)?;
    }
    match spec.target() {
        Some(target) if role_of(target, file).is_none() => Err(format!(
            "fault `{text}`: no role or instance `{target}` (roles: {})",
            names(file.roles.keys())
        )),
        _ => Ok(spec),
    }
}

/// The service `spec` hits is declared, with the wire protocol the fault reads (if it reads one).
fn check_service(
    text: &str,
    spec: &Nemesis,
    service: &str,
    file: &SystemFile,
) -> Result<(), String> {
    let Some(declared) = file.services.get(service) else {
        return Err(format!(
            "fault `{text}`: no service `{service}` (services: {})",
            names(file.services.keys())
        ));
    };
    let What::Wire { fault, .. } = spec.what else {
        return Ok(());
    };
    if fault.loses_a_reply() && declared.wire.offer(fault).is_none() {
        return Err(format!(
            "fault `{text}`: the proxy loses this reply only on a service with wire = {}: give \
             [services.{service}] one (it says \"{}\")",
            fault.wires_in_words(),
            declared.wire.as_str()
        ));
    }
    Ok(())
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

/// The names, comma-separated, or `none`.
fn names<'a>(it: impl Iterator<Item = &'a String>) -> String {
    let v: Vec<&str> = it.map(String::as_str).collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}
