//! The state store a framework adapter parks in when its user gives none: a folder of this
//! process, made on first use (0700) with a new key in it (0600), shared by every adapter of
//! the process and removed when the package shuts down at exit. An Exec parked there
//! resumes only in this process; one that must resume elsewhere needs a store of its own.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::PathBuf;
use std::sync::Mutex;

use crate::Fault;

/// The process that made the folder, and the folder.
static PRIVATE: Mutex<Option<(u32, PathBuf)>> = Mutex::new(None);

/// The private store's folder and key file, made on first use (again in a forked child, whose
/// parent removes its own at exit).
pub fn private_store() -> Result<(PathBuf, PathBuf), Fault> {
    let mut private = PRIVATE.lock().unwrap_or_else(|e| e.into_inner());
    let made_here = private.as_ref().is_some_and(|(pid, _)| *pid == std::process::id());
    if !made_here {
        let failed = |e: std::io::Error| Fault::Session(format!("the private state store could not be made: {e}"));
        let folder = tempfile::Builder::new()
            .prefix("exec-host-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(failed)?
            .keep();
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| failed(std::io::Error::other(e.to_string())))?;
        let hex: String = key.iter().map(|byte| format!("{byte:02x}")).collect();
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(folder.join("state.key"))
            .and_then(|mut file| file.write_all(hex.as_bytes()))
            .map_err(failed)?;
        *private = Some((std::process::id(), folder));
    }
    let folder = &private.as_ref().map(|(_, folder)| folder.clone()).unwrap_or_default();
    Ok((folder.join("store"), folder.join("state.key")))
}

/// Removes the private store, if this process made one.
pub fn remove_private_store() {
    let mut private = PRIVATE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((pid, folder)) = private.take()
        && pid == std::process::id()
    {
        let _ = std::fs::remove_dir_all(folder);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_once_private_and_removed() {
        let (store, key) = private_store().unwrap();
        assert_eq!(private_store().unwrap(), (store.clone(), key.clone()));
        let folder = key.parent().unwrap().to_path_buf();
        assert_eq!(std::fs::metadata(&folder).unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(&key).unwrap().len(), 64);
        remove_private_store();
        assert!(!folder.exists());
    }
}
