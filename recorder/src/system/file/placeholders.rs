//! The placeholders a system file's commands, environment and tasks may name: every `${...}`
//! is checked against the names known where it stands.

use std::collections::BTreeSet;

use super::schema::SystemFile;
use crate::system::template::Template;

/// The placeholder names every command and the environment of one file may use.
pub(super) struct Placeholders {
    global: BTreeSet<String>,
}

impl Placeholders {
    /// The names `file` offers everywhere: `dir`, each service's ports and directory, and the
    /// port of each role that asks for one.
    pub(super) fn of(file: &SystemFile) -> Placeholders {
        let mut global = BTreeSet::from(["dir".to_string()]);
        for s in file.services.keys() {
            global.insert(format!("services.{s}.port"));
            global.insert(format!("services.{s}.real_port"));
            global.insert(format!("services.{s}.dir"));
        }
        for (r, spec) in &file.roles {
            if spec.port {
                global.insert(format!("roles.{r}.port"));
            }
        }
        Placeholders { global }
    }

    /// Checks that every placeholder of `templates` is a global name or one of `extra` (the
    /// names only `place` knows); the error names the first unknown one and those known there.
    pub(super) fn check<'t>(
        &self,
        place: &str,
        templates: impl IntoIterator<Item = &'t Template>,
        extra: &[&str],
    ) -> Result<(), String> {
        for t in templates {
            if let Some(name) = t.unknown(|n| self.global.contains(n) || extra.contains(&n)) {
                let mut known: Vec<&str> = self.global.iter().map(String::as_str).collect();
                known.extend(extra);
                return Err(format!(
                    "{place}: unknown placeholder `${{{name}}}` (known here: {})",
                    known.join(", ")
                ));
            }
        }
        Ok(())
    }
}
