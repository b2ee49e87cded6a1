//! The file an export is written to (the dashboard's `:export`, `taskrail export -o`): always
//! a new file, private to the user (0600 on Unix), never an existing path and never through
//! a symbolic link (`O_CREAT|O_EXCL` refuses both, a dangling link included).
//!
//! Owns: creating and filling that one file. Must not overwrite, follow or chmod anything.

use std::io::Write as _;
use std::path::Path;

/// Why an export file was not written, in words a user can act on.
#[derive(Debug, thiserror::Error)]
pub enum ExportFileError {
    #[error("{0} already exists (a symbolic link); nothing written: choose another file name")]
    Symlink(String),
    #[error("{0} already exists; nothing written: choose another file name or remove it first")]
    Exists(String),
    #[error("cannot write {0}: {1}")]
    Io(String, std::io::Error),
}

/// Create `path` as a new file readable and writable by the user alone and write `bytes`
/// to it. An existing file, directory or symbolic link at `path` is left untouched and
/// refused. A write that fails half-way removes the file it created.
pub fn write_new_private(path: &Path, bytes: &[u8]) -> Result<(), ExportFileError> {
    let shown = path.display().to_string();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = match options.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
            return Err(if link {
                ExportFileError::Symlink(shown)
            } else {
                ExportFileError::Exists(shown)
            });
        }
        Err(e) => return Err(ExportFileError::Io(shown, e)),
    };
    if let Err(e) = file.write_all(bytes).and_then(|()| file.sync_all()) {
        drop(file);
        let _ = std::fs::remove_file(path);
        return Err(ExportFileError::Io(shown, e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!(
            "taskrail-export-file-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_new_export_is_private_to_the_user() {
        let d = dir();
        let path = d.join("t.jsonl");
        write_new_private(&path, b"{}\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{}\n");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "mode {mode:o}");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn an_existing_file_is_refused_and_left_untouched() {
        let d = dir();
        let path = d.join("t.jsonl");
        std::fs::write(&path, "keep me").unwrap();
        let err = write_new_private(&path, b"new").unwrap_err();
        assert!(matches!(err, ExportFileError::Exists(_)), "{err:?}");
        let text = err.to_string();
        assert!(text.contains("already exists"), "{text}");
        assert!(text.contains("nothing written"), "{text}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "keep me");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_is_refused_and_its_target_left_untouched() {
        let d = dir();
        let target = d.join("victim");
        std::fs::write(&target, "secret").unwrap();
        let link = d.join("t.jsonl");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = write_new_private(&link, b"new").unwrap_err();
        assert!(matches!(err, ExportFileError::Symlink(_)), "{err:?}");
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "secret");
        // a dangling link is refused too: nothing is created where it points
        let gone = d.join("not-there");
        let dangling = d.join("dangling.jsonl");
        std::os::unix::fs::symlink(&gone, &dangling).unwrap();
        let err = write_new_private(&dangling, b"new").unwrap_err();
        assert!(matches!(err, ExportFileError::Symlink(_)), "{err:?}");
        assert!(!gone.exists());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
