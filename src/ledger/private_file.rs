//! A ledger file this user alone may read: the SQLite ledger and the PostgreSQL ledger's
//! local spool hold task ids, which are bearer secrets.

use std::fs::OpenOptions;
use std::path::Path;

use anyhow::Context;

/// Create parent directories and the file itself with owner-only permissions.
pub(crate) fn prepare_file(path: &Path) -> anyhow::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        builder
            .create(parent)
            .with_context(|| format!("creating ledger directory {}", parent.display()))?;
    }
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let file = options
        .open(path)
        .with_context(|| format!("creating ledger file {}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("restricting permissions of {}", path.display()))?;
    }
    drop(file);
    Ok(())
}
