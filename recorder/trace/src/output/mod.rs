//! Where a command writes, and how what it writes is made safe for where it goes:
//!
//! - [`check`] and [`Inputs`]: an output path is refused when it is one of the command's inputs
//!   (the same file by device and inode, whatever the spelling or symlink leading to it), when
//!   two outputs name the same file, or when it exists and is not a regular file (a directory, a
//!   device such as `/dev/null`, a FIFO), so no command destroys its own input or turns a device
//!   into a file;
//! - [`name::path_component`]: a scenario name as one safe file or directory name;
//! - [`escape`]: one escaping function per output kind (a terminal, XML, Markdown).

pub mod escape;
pub mod name;

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

pub use name::path_component;

/// Why an output path is refused.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The output is one of the inputs: writing it would destroy what is being read.
    #[error(
        "{label} {}: is the input {}; it would be overwritten (name another file)",
        output.display(),
        input.display()
    )]
    IsInput {
        /// How the command line names the output (`--junit`, `-o`).
        label: String,
        /// The output as given.
        output: PathBuf,
        /// The input it is, as given.
        input: PathBuf,
    },
    /// Two outputs of one command name the same file.
    #[error("{first} and {second} both name {}; name two files", path.display())]
    Twice {
        /// The first output's label.
        first: String,
        /// The second output's label.
        second: String,
        /// The file, as the second names it.
        path: PathBuf,
    },
    /// The output exists and is not a regular file.
    #[error("{label} {}: exists and is {what}, not a regular file (name a file)", output.display())]
    NotAFile {
        /// How the command line names the output.
        label: String,
        /// The output as given.
        output: PathBuf,
        /// What it is (`a directory`, `a device`, ...).
        what: &'static str,
    },
}

/// What a path is, for telling two spellings of one file apart from two files: the device and
/// inode of an existing file, or else its absolute path with its directory's symlinks resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Identity {
    Inode(u64, u64),
    Path(PathBuf),
}

fn identity(path: &Path) -> Identity {
    if let Ok(meta) = std::fs::metadata(path) {
        return Identity::Inode(meta.dev(), meta.ino());
    }
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let resolved = match (absolute.parent(), absolute.file_name()) {
        (Some(dir), Some(name)) => std::fs::canonicalize(dir).map(|d| d.join(name)).ok(),
        _ => None,
    };
    Identity::Path(resolved.unwrap_or(absolute))
}

/// What an existing path is when it is not a regular file.
fn not_a_file(path: &Path) -> Option<&'static str> {
    let meta = std::fs::metadata(path).ok()?;
    let t = meta.file_type();
    use std::os::unix::fs::FileTypeExt as _;
    match () {
        _ if t.is_file() => None,
        _ if t.is_dir() => Some("a directory"),
        _ if t.is_char_device() || t.is_block_device() => Some("a device"),
        _ if t.is_fifo() => Some("a FIFO"),
        _ if t.is_socket() => Some("a socket"),
        _ => Some("not a file"),
    }
}

/// A command's inputs, held to refuse an output that is one of them.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    known: Vec<(PathBuf, Identity)>,
}

impl Inputs {
    /// The inputs at `paths` (which need not exist: a missing one is known by its path).
    pub fn new<P: AsRef<Path>>(paths: &[P]) -> Inputs {
        let known = paths
            .iter()
            .map(|p| (p.as_ref().to_path_buf(), identity(p.as_ref())))
            .collect();
        Inputs { known }
    }

    /// Refuses `output` (named `label` on the command line) if it is one of the inputs or
    /// exists and is not a regular file.
    pub fn check(&self, label: &str, output: &Path) -> Result<(), OutputError> {
        if let Some(what) = not_a_file(output) {
            return Err(OutputError::NotAFile {
                label: label.to_string(),
                output: output.to_path_buf(),
                what,
            });
        }
        let id = identity(output);
        match self.known.iter().find(|(_, known)| *known == id) {
            Some((input, _)) => Err(OutputError::IsInput {
                label: label.to_string(),
                output: output.to_path_buf(),
                input: input.clone(),
            }),
            None => Ok(()),
        }
    }
}

/// Refuses the outputs (each with its label) if one is an input, exists and is not a regular
/// file, or names the same file as another.
pub fn check(outputs: &[(&str, &Path)], inputs: &Inputs) -> Result<(), OutputError> {
    let mut seen: Vec<(&str, Identity)> = Vec::new();
    for &(label, path) in outputs {
        inputs.check(label, path)?;
        let id = identity(path);
        if let Some((first, _)) = seen.iter().find(|(_, known)| *known == id) {
            return Err(OutputError::Twice {
                first: first.to_string(),
                second: label.to_string(),
                path: path.to_path_buf(),
            });
        }
        seen.push((label, id));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_by_another_spelling_or_a_symlink_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("t.parquet");
        std::fs::write(&trace, "x").unwrap();
        let link = dir.path().join("link.parquet");
        std::os::unix::fs::symlink(&trace, &link).unwrap();
        let inputs = Inputs::new(&[&trace]);
        let other = dir.path().join("sub/../t.parquet");
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        for spelling in [&trace, &link, &other] {
            let e = inputs.check("--junit", spelling).unwrap_err();
            assert!(matches!(e, OutputError::IsInput { .. }), "{e}");
        }
        assert!(inputs.check("--junit", &dir.path().join("j.xml")).is_ok());
    }

    #[test]
    fn devices_directories_and_twice_named_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let none = Inputs::default();
        let e = none.check("-o", Path::new("/dev/null")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "-o /dev/null: exists and is a device, not a regular file (name a file)"
        );
        assert!(none.check("-o", dir.path()).is_err());
        let a = dir.path().join("a.xml");
        let b = dir.path().join("./a.xml");
        let e = check(&[("--junit", &a), ("--json", &b)], &none).unwrap_err();
        assert!(matches!(e, OutputError::Twice { .. }), "{e}");
        assert!(check(&[("--junit", &a), ("--json", &dir.path().join("b"))], &none).is_ok());
    }
}
