//! A name from a trace or a system file (a scenario's) as one file or directory name: the one
//! function both the recorder and the analyzer make such paths with.

/// The longest component made, in bytes (digest included): far under any file system's 255.
pub const MAX_COMPONENT: usize = 80;

/// `name` as one path component: ASCII letters, digits, `.`, `_` and `-` kept, every other
/// character `_`, no leading dot (so never `.` nor `..`), never empty. A name that had to change
/// (or was longer than [`MAX_COMPONENT`]) gets `-` and a digest of the whole name appended, so two
/// names that clean to the same text (`a/b`, `a_b`) stay two components, and a name that needed
/// no change is kept as it is.
pub fn path_component(name: &str) -> String {
    let mut clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.starts_with('.') {
        clean.replace_range(0..1, "_");
    }
    if clean == name && !clean.is_empty() && clean.len() <= MAX_COMPONENT {
        return clean;
    }
    let digest = format!("{:012x}", fnv1a(name.as_bytes()) >> 16);
    clean.truncate(MAX_COMPONENT - digest.len() - 1);
    format!("{clean}-{digest}")
}

/// FNV-1a, 64 bits: a stable digest (the same name gives the same directory on every machine).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_component_never_leaves_its_directory_and_names_stay_apart() {
        assert_eq!(path_component("crash-relay"), "crash-relay");
        for hostile in ["../../../../tmp/x", "..", ".", "", "a/b", "/etc", ".hidden"] {
            let c = path_component(hostile);
            assert!(
                !c.contains('/') && !c.starts_with('.') && !c.is_empty(),
                "{c}"
            );
            assert!(c.len() <= MAX_COMPONENT);
        }
        assert_ne!(path_component("a/b"), path_component("a_b"));
        assert_eq!(path_component("a_b"), "a_b");
        let long = "x".repeat(300);
        let c = path_component(&long);
        assert_eq!(c.len(), MAX_COMPONENT);
        assert_ne!(c, path_component(&"x".repeat(301)));
        assert_eq!(c, path_component(&long), "stable");
    }
}
