//! Where a host keeps its parked Execs, as a person names them: a folder or a Redis address,
//! and the key file that seals the entries; this machine's defaults for what is not named.
//! Both are private places: never inside the workspace, where scripts read and write files (a
//! script that read the key could forge what a resume replays), and never read by a command.

use std::path::{Path, PathBuf};

use crate::state::{SealedStore, StateKey, StoreError, default_locations, open_store};
use crate::support::private::{InsideWorkspace, check_outside_workspace};

/// A state store and its key as given; `None` takes this machine's default
/// ([`default_locations`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StorePlaces {
    /// A folder, or `redis://HOST:PORT[/DB]` (`rediss://` with TLS).
    pub location: Option<String>,
    /// The key file: it must exist when given; the default one is made (0600) when missing.
    pub key_file: Option<PathBuf>,
}

/// Why the store of [`StorePlaces::open`] could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenStoreError {
    /// Nothing was named and this machine has no default place (HOME and XDG_STATE_HOME unset).
    #[error("no {what} is given, and there is no default (HOME and XDG_STATE_HOME are unset)")]
    NoDefault { what: &'static str },
    /// The folder or the key file is, or could come to be, inside the workspace.
    #[error("the {what} {inside}")]
    InsideWorkspace { what: &'static str, inside: InsideWorkspace },
    /// The default key file's folder could not be made.
    #[error("cannot make {}", .folder.display())]
    KeyFolder {
        folder: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl StorePlaces {
    /// A store at `location` with the key in `key_file`, each `None` for this machine's
    /// default.
    pub fn new(location: Option<String>, key_file: Option<PathBuf>) -> Self {
        StorePlaces { location, key_file }
    }

    /// The places of this store on this machine (its folder, unless it is an address, and its
    /// key file), which a command must never read: give them to
    /// [`SessionBuilder::private_places`](crate::SessionBuilder::private_places).
    pub fn private_places(&self) -> Vec<PathBuf> {
        let defaults = default_locations();
        let Some(location) = self.location(&defaults) else { return Vec::new() };
        self.places(&location, &defaults).into_iter().filter_map(|(_, place)| place).collect()
    }

    /// Opens the store, sealed with its key, after checking that neither is inside
    /// `workspace`.
    pub async fn open(&self, workspace: Option<&Path>) -> Result<SealedStore, OpenStoreError> {
        let defaults = default_locations();
        let location = self.location(&defaults).ok_or(OpenStoreError::NoDefault { what: "state store folder" })?;
        for (what, place) in self.places(&location, &defaults) {
            if let (Some(place), Some(workspace)) = (place, workspace) {
                check_outside_workspace(&place, workspace).map_err(|inside| OpenStoreError::InsideWorkspace { what, inside })?;
            }
        }
        let key = match (&self.key_file, &defaults) {
            (Some(file), _) => StateKey::read(file)?,
            (None, Some((_, file))) => {
                if let Some(folder) = file.parent() {
                    use std::os::unix::fs::DirBuilderExt;
                    std::fs::DirBuilder::new()
                        .recursive(true)
                        .mode(0o700)
                        .create(folder)
                        .map_err(|source| OpenStoreError::KeyFolder { folder: folder.to_path_buf(), source })?;
                }
                StateKey::read_or_create(file)?
            }
            (None, None) => return Err(OpenStoreError::NoDefault { what: "state key file" }),
        };
        Ok(SealedStore::new(open_store(&location).await?, key))
    }

    fn location(&self, defaults: &Option<(PathBuf, PathBuf)>) -> Option<String> {
        self.location.clone().or_else(|| defaults.as_ref().map(|(folder, _)| folder.display().to_string()))
    }

    /// The store's folder at `location` (unless it is an address) and its key file, each with
    /// what it is.
    fn places(&self, location: &str, defaults: &Option<(PathBuf, PathBuf)>) -> [(&'static str, Option<PathBuf>); 2] {
        let key_file = self.key_file.as_ref().or(defaults.as_ref().map(|(_, file)| file));
        [
            ("state store folder", (!location.contains("://")).then(|| PathBuf::from(location))),
            ("state key file", key_file.cloned()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_store_or_key_inside_the_workspace_is_refused_and_one_outside_opens() {
        let root = tempfile::tempdir().unwrap();
        let workspace = root.path().join("ws");
        std::fs::create_dir(&workspace).unwrap();
        let key = root.path().join("state.key");
        std::fs::write(&key, "07".repeat(crate::state::STATE_KEY_BYTES)).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();

        let inside = StorePlaces::new(Some(workspace.join("store").display().to_string()), Some(key.clone()));
        let refused = inside.open(Some(&workspace)).await.unwrap_err();
        assert!(matches!(refused, OpenStoreError::InsideWorkspace { what: "state store folder", .. }), "{refused}");

        let key_inside = StorePlaces::new(Some(root.path().join("store").display().to_string()), Some(workspace.join("k")));
        let refused = key_inside.open(Some(&workspace)).await.unwrap_err();
        assert!(matches!(refused, OpenStoreError::InsideWorkspace { what: "state key file", .. }), "{refused}");

        let outside = StorePlaces::new(Some(root.path().join("store").display().to_string()), Some(key.clone()));
        outside.open(Some(&workspace)).await.unwrap();
        assert_eq!(outside.private_places(), vec![root.path().join("store"), key]);
    }
}
