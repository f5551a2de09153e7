//! [`CrashSite`]: where and how an actor's life ended, as `detail.point` of a `crash` row gives it.

use crate::Kind;

/// Where an actor died, as a `crash` row names it (`detail.point`).
///
/// Not to be confused with the recorder's own crash points (the lab's in-actor points it can
/// arm, such as `relay:before-publish`): in a trace those are names like any other, and read as
/// [`CrashSite::Other`]. Written as the plain name. Reading never fails: a name this contract
/// does not define is kept as it is and written back unchanged, and a `crash` row without a
/// (string) `point` reads as the empty name, `Other("")` (the [`Default`]). Values compare, hash
/// and order as their names.
#[derive(Debug, Clone)]
pub enum CrashSite {
    /// `exit`: the process exited on its own (`detail.status`).
    Exit,
    /// `kill`: a timed kill.
    Kill,
    /// `error`: the actor's life ended on an error (`detail.error`).
    Error,
    /// `chaos:sigkill`: a kill the chaos plan drew.
    ChaosSigkill,
    /// `<role>:after-<kind>`: a kill on a held export, after a process of `role` reported a step
    /// of `kind`.
    AfterStep(AfterStep),
    /// Any other name (the lab's in-actor points, names this contract does not define), kept
    /// as it is. [`CrashSite::from`] never makes one for a name another variant stands for.
    Other(String),
}

/// A kill on a held export (`<role>:after-<kind>`): the process of a role killed right after it
/// reported a step of a kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AfterStep {
    /// The whole name, `<role>:after-<kind>`.
    name: String,
    /// The length of the role at the start of `name`.
    role: usize,
    kind: Kind,
}

/// What separates the role from the kind in an [`AfterStep`]'s name.
const AFTER: &str = ":after-";

impl AfterStep {
    /// A kill of a process of `role` after it reported a step of `kind`.
    pub fn new(role: &str, kind: Kind) -> Self {
        AfterStep {
            name: format!("{role}{AFTER}{kind}"),
            role: role.len(),
            kind,
        }
    }

    /// The role of the process killed.
    pub fn role(&self) -> &str {
        &self.name[..self.role]
    }

    /// The kind of the step it had just reported.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The name, `<role>:after-<kind>`.
    pub fn as_str(&self) -> &str {
        &self.name
    }

    /// Reads `<role>:after-<kind>`, where the role is not empty and the kind is one of
    /// [`Kind::ALL`].
    fn parse(name: String) -> Result<Self, String> {
        let parsed = name
            .rsplit_once(AFTER)
            .filter(|(role, _)| !role.is_empty())
            .and_then(|(role, kind)| Some((role.len(), kind.parse::<Kind>().ok()?)));
        match parsed {
            Some((role, kind)) => Ok(AfterStep { name, role, kind }),
            None => Err(name),
        }
    }
}

super::named!(CrashSite);

impl CrashSite {
    /// The sites the contract names with a fixed name (a kill after a step is
    /// [`CrashSite::AfterStep`]).
    pub const ALL: &'static [CrashSite] = &[
        CrashSite::Exit,
        CrashSite::Kill,
        CrashSite::Error,
        CrashSite::ChaosSigkill,
    ];

    /// A kill on a held export: of a process of `role`, after it reported a step of `kind`.
    pub fn after_step(role: &str, kind: Kind) -> Self {
        CrashSite::AfterStep(AfterStep::new(role, kind))
    }

    /// The name as written in `detail.point`.
    pub fn as_str(&self) -> &str {
        match self {
            CrashSite::Exit => "exit",
            CrashSite::Kill => "kill",
            CrashSite::Error => "error",
            CrashSite::ChaosSigkill => "chaos:sigkill",
            CrashSite::AfterStep(after) => after.as_str(),
            CrashSite::Other(name) => name,
        }
    }

    /// Whether the contract defines this site (it is not [`CrashSite::Other`]).
    pub fn is_known(&self) -> bool {
        !matches!(self, CrashSite::Other(_))
    }

    /// The name, as an owned string (no copy where the site holds it).
    pub fn into_string(self) -> String {
        match self {
            CrashSite::AfterStep(after) => after.name,
            CrashSite::Other(name) => name,
            fixed => fixed.as_str().to_string(),
        }
    }

    /// The site of this name: a fixed one, a kill after a step, else `Other` holding the name.
    fn from_name(name: String) -> Self {
        match name.as_str() {
            "exit" => CrashSite::Exit,
            "kill" => CrashSite::Kill,
            "error" => CrashSite::Error,
            "chaos:sigkill" => CrashSite::ChaosSigkill,
            _ => match AfterStep::parse(name) {
                Ok(after) => CrashSite::AfterStep(after),
                Err(name) => CrashSite::Other(name),
            },
        }
    }
}

impl Default for CrashSite {
    /// The empty name, `Other("")`: what a `crash` row without a `point` reads as.
    fn default() -> Self {
        CrashSite::Other(String::new())
    }
}
