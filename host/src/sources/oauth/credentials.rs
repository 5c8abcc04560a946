//! Where the OAuth tokens of MCP servers and HTTP APIs are kept between runs: one JSON file
//! that only this user may read (`$XDG_DATA_HOME/exec-host/credentials.json` by default), one
//! entry per server name (`servers`) and per API name (`apis`), bound to the server's URL or
//! the API's base URL (the OAuth resource). A token kept for another URL is never sent to
//! this one.
//!
//! The file is never read or written through a link, nor anywhere the workspace reaches
//! (inside it, or on a way through it: scripts read and write files there). One that
//! others may read is made private again (with a warning) when it is this user's, and
//! refused when it is not. One that does not parse is reported and replaced by the next
//! login. Writes go to a new file beside it that is renamed over it, under a lock that
//! other processes of this user take too, so two runs refreshing at once do not lose each
//! other's entries. On a read-only file (a mounted Secret), refreshed tokens are kept in
//! memory for the process's life; a sign-in whose tokens could not be saved says so.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};
use tracing::warn;

use crate::support::lock::Unpoisoned;
use crate::support::report::error_sentence;

/// Largest credentials file read: a few hundred servers' tokens fit many times over.
pub const MAX_CREDENTIALS_FILE_BYTES: u64 = 1024 * 1024;

/// The credentials file of a session (or of `exec-host mcp login`), shared by its servers.
#[derive(Clone)]
pub struct CredentialsFile {
    path: PathBuf,
    /// The workspace of the session, which must not reach the file.
    workspace: Option<PathBuf>,
    /// Entries saved while the file could not be written, by holder, with why not.
    unsaved: Arc<Mutex<BTreeMap<Holder, (Entry, String)>>>,
}

/// What is wrong with where the tokens are kept.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialsError {
    /// The workspace reaches the file, so a script could read the tokens.
    #[error("the credentials file {why}; keep it outside")]
    InWorkspace { path: PathBuf, why: crate::support::private::InsideWorkspace },
    /// A sign-in got tokens that could not be written to the file.
    #[error("the sign-in to {holder} succeeded but its tokens were NOT saved, so the next run asks again: {why}")]
    NotSaved { holder: Holder, why: String },
    /// The file cannot be read or written as it is (`what` ends the sentence that begins
    /// with it: `is not a plain file`), with the system's error when there is one.
    #[error("the credentials file {} {what}", .path.display())]
    Unusable {
        path: PathBuf,
        what: String,
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

impl std::fmt::Debug for CredentialsFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialsFile").field("path", &self.path).field("workspace", &self.workspace).finish_non_exhaustive()
    }
}

#[derive(Clone, Serialize, Deserialize)]
struct Entry {
    /// The server URL (the OAuth resource) the tokens were issued for.
    resource: String,
    credentials: StoredCredentials,
}

#[derive(Default, Serialize, Deserialize)]
struct Contents {
    #[serde(default)]
    servers: BTreeMap<String, Entry>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    apis: BTreeMap<String, Entry>,
}

impl Contents {
    /// The entries of `holder`'s kind.
    fn entries(&mut self, holder: &Holder) -> &mut BTreeMap<String, Entry> {
        match holder {
            Holder::Server(_) => &mut self.servers,
            Holder::Api(_) => &mut self.apis,
        }
    }
}

/// Whose tokens an entry holds: an MCP server's or an HTTP API's (their names are separate,
/// as `mcp__` and `api__` tools are).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Holder {
    Server(String),
    Api(String),
}

impl Holder {
    pub fn name(&self) -> &str {
        match self {
            Holder::Server(name) | Holder::Api(name) => name,
        }
    }
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Holder::Server(name) => write!(f, "MCP server `{name}`"),
            Holder::Api(name) => write!(f, "API `{name}`"),
        }
    }
}

/// Whether a server is signed in, as `exec-host mcp list` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SignIn {
    /// Tokens are kept for this server at this URL.
    SignedIn,
    /// Tokens are kept for this server's name at another URL: they are not used.
    OtherUrl,
    NotSignedIn,
}

impl CredentialsFile {
    /// The file at `path`.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        CredentialsFile { path: path.into(), workspace: None, unsaved: Arc::default() }
    }

    /// The same file, refused whenever `workspace` reaches it ([`CredentialsFile::check_place`]).
    pub fn kept_out_of(mut self, workspace: impl Into<PathBuf>) -> Self {
        self.workspace = Some(workspace.into());
        self
    }

    /// Refuses the file when the workspace reaches it, as its path and links resolve now
    /// (checked before every read and write, so a folder or link made since is seen).
    pub fn check_place(&self) -> Result<(), CredentialsError> {
        match &self.workspace {
            Some(workspace) => crate::support::private::check_outside_workspace(&self.path, workspace)
                .map_err(|why| CredentialsError::InWorkspace { path: self.path.clone(), why }),
            None => Ok(()),
        }
    }

    /// Whether the tokens of `holder` signed in to by this process are in the file: an
    /// error saying why not when they are kept in memory only.
    pub fn check_saved(&self, holder: &Holder) -> Result<(), CredentialsError> {
        match self.unsaved.locked().get(holder) {
            Some((_, why)) => Err(CredentialsError::NotSaved { holder: holder.clone(), why: why.clone() }),
            None => Ok(()),
        }
    }

    /// `$XDG_DATA_HOME/exec-host/credentials.json` (else under `~/.local/share`), when there
    /// is a home to resolve it in.
    pub fn default_path() -> Option<PathBuf> {
        crate::support::dirs::BaseDir::Data.exec_host().map(|folder| folder.join("credentials.json"))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `holder` at `url` has tokens kept.
    pub fn sign_in(&self, holder: &Holder, url: &str) -> Result<SignIn, CredentialsError> {
        Ok(match self.entry(holder)? {
            Some(entry) if entry.resource == url && entry.credentials.token_response.is_some() => SignIn::SignedIn,
            Some(entry) if entry.credentials.token_response.is_some() => SignIn::OtherUrl,
            _ => SignIn::NotSignedIn,
        })
    }

    /// The scopes granted to `holder` at `url` by its last sign-in.
    pub(crate) fn granted_scopes(&self, holder: &Holder, url: &str) -> Vec<String> {
        match self.entry(holder) {
            Ok(Some(entry)) if entry.resource == url => entry.credentials.granted_scopes,
            _ => Vec::new(),
        }
    }

    /// Forgets the tokens of `holder`; whether there were any.
    pub fn forget(&self, holder: &Holder) -> Result<bool, CredentialsError> {
        let had = self.unsaved.locked().remove(holder).is_some();
        let mut removed = false;
        self.update(|contents| removed = contents.entries(holder).remove(holder.name()).is_some())?;
        Ok(had || removed)
    }

    /// The store rmcp reads and refreshes `holder`'s tokens through.
    pub(crate) fn store_for(&self, holder: &Holder, url: &str) -> HeldCredentials {
        HeldCredentials { file: self.clone(), holder: holder.clone(), resource: url.to_string() }
    }

    fn entry(&self, holder: &Holder) -> Result<Option<Entry>, CredentialsError> {
        if let Some((entry, _)) = self.unsaved.locked().get(holder) {
            return Ok(Some(entry.clone()));
        }
        Ok(self.read()?.entries(holder).remove(holder.name()))
    }

    /// The file's entries; none when it does not exist or does not parse (said once).
    fn read(&self) -> Result<Contents, CredentialsError> {
        self.check_place()?;
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(&self.path)
        {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Contents::default()),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(self.refusal("is a link, which is not followed")),
            Err(e) => return Err(self.failure("cannot be opened", e)),
        };
        let metadata = file.metadata().map_err(|e| self.failure("cannot be inspected", e))?;
        if !metadata.is_file() {
            return Err(self.refusal("is not a plain file"));
        }
        if metadata.mode() & 0o077 != 0 {
            // SAFETY: geteuid(2) has no preconditions and cannot fail.
            if metadata.uid() != unsafe { libc::geteuid() } {
                return Err(self.refusal(format!("is open to other users (mode {:o}) and not yours", metadata.mode() & 0o777)));
            }
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(|e| self.failure("is open to other users and cannot be made private", e))?;
            warn!(
                "{} was open to other users (mode {:o}); it is now readable by you alone",
                self.path.display(),
                metadata.mode() & 0o777
            );
        }
        if metadata.len() > MAX_CREDENTIALS_FILE_BYTES {
            return Err(self.refusal(format!("is larger than {MAX_CREDENTIALS_FILE_BYTES} bytes")));
        }
        let text = crate::support::text_file::bounded_text(file, MAX_CREDENTIALS_FILE_BYTES)
            .map_err(|e| self.failure("cannot be read", e))?;
        match serde_json::from_str(&text) {
            Ok(contents) => Ok(contents),
            Err(e) => {
                warn!("{} is not a credentials file ({e}); it is ignored, and replaced at the next login", self.path.display());
                Ok(Contents::default())
            }
        }
    }

    /// Changes the file's entries with `change`, under the lock, and writes them back.
    fn update(&self, change: impl FnOnce(&mut Contents)) -> Result<(), CredentialsError> {
        // Before its folder is made: a folder made in the workspace is already too much.
        self.check_place()?;
        let folder = self.path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(folder)
            .map_err(|e| self.failure("cannot have its folder created", e))?;
        let _lock = FileLock::take(&self.lock_path()).map_err(|e| self.failure("cannot be locked", e))?;
        let mut contents = self.read()?;
        change(&mut contents);
        let name = self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let temporary = folder.join(format!(".{name}.{}.tmp", std::process::id()));
        let written = (|| -> std::io::Result<()> {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&temporary)?;
            file.write_all(serde_json::to_string_pretty(&contents).expect("credentials serialise").as_bytes())?;
            file.sync_all()?;
            std::fs::rename(&temporary, &self.path)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temporary);
            return Err(self.failure("cannot be written", e));
        }
        Ok(())
    }

    fn lock_path(&self) -> PathBuf {
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        name.push(".lock");
        self.path.with_file_name(name)
    }

    /// The file cannot be used because it `what` (`is not a plain file`).
    fn refusal(&self, what: impl Into<String>) -> CredentialsError {
        CredentialsError::Unusable { path: self.path.clone(), what: what.into(), source: None }
    }

    /// The file `what` (`cannot be opened`), for the reason `source` gives.
    fn failure(&self, what: &str, source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> CredentialsError {
        CredentialsError::Unusable { path: self.path.clone(), what: what.to_string(), source: Some(source.into()) }
    }
}

/// An exclusive `flock(2)` on a file beside the credentials, held while it lives.
struct FileLock(std::fs::File);

impl FileLock {
    fn take(path: &Path) -> std::io::Result<FileLock> {
        use std::os::fd::AsRawFd as _;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)?;
        // SAFETY: flock(2) on a descriptor this function owns; no memory is shared.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(FileLock(file))
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd as _;
        // SAFETY: as in `take`.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// One server's or API's tokens in the credentials file, as rmcp's authorization reads,
/// refreshes and saves them.
pub(crate) struct HeldCredentials {
    file: CredentialsFile,
    holder: Holder,
    resource: String,
}

#[async_trait::async_trait]
impl CredentialStore for HeldCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let entry = self.file.entry(&self.holder).map_err(|e| AuthError::CredentialStoreError(error_sentence(&e)))?;
        // Tokens issued for another URL are not this server's.
        Ok(entry.filter(|entry| entry.resource == self.resource).map(|entry| entry.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let entry = Entry { resource: self.resource.clone(), credentials };
        let saved = self.file.update(|contents| {
            contents.entries(&self.holder).insert(self.holder.name().to_string(), entry.clone());
        });
        match saved {
            Ok(()) => {
                self.file.unsaved.locked().remove(&self.holder);
            }
            Err(why) => {
                let why = error_sentence(&why);
                let first = self.file.unsaved.locked().insert(self.holder.clone(), (entry, why.clone())).is_none();
                if first {
                    warn!("{}: new tokens are kept for this run only: {why}", self.holder);
                }
            }
        }
        Ok(())
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.file.forget(&self.holder).map(|_| ()).map_err(|e| AuthError::CredentialStoreError(error_sentence(&e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(name: &str) -> Holder {
        Holder::Server(name.into())
    }

    fn kept(file: &CredentialsFile, server: &str, url: &str) {
        let token: rmcp::transport::auth::OAuthTokenResponse =
            serde_json::from_value(serde_json::json!({"access_token": "secret-token", "token_type": "bearer"})).unwrap();
        let credentials = StoredCredentials::new("client".into(), Some(token), vec!["read".into()], Some(1));
        futures::executor::block_on(file.store_for(&Holder::Server(server.into()), url).save(credentials)).unwrap();
    }

    #[test]
    fn tokens_are_kept_per_server_and_url_in_a_file_only_its_user_reads() {
        let dir = tempfile::tempdir().unwrap();
        let file = CredentialsFile::at(dir.path().join("nested/credentials.json"));
        assert_eq!(file.sign_in(&server("crm"), "https://crm.example/mcp").unwrap(), SignIn::NotSignedIn);
        kept(&file, "crm", "https://crm.example/mcp");
        assert_eq!(file.sign_in(&server("crm"), "https://crm.example/mcp").unwrap(), SignIn::SignedIn);
        assert_eq!(file.sign_in(&server("crm"), "https://other.example/mcp").unwrap(), SignIn::OtherUrl);
        let loaded = futures::executor::block_on(file.store_for(&server("crm"), "https://other.example/mcp").load()).unwrap();
        assert!(loaded.is_none(), "a token kept for one URL is never sent to another");
        assert_eq!(file.granted_scopes(&server("crm"), "https://crm.example/mcp"), ["read"]);
        let mode = std::fs::metadata(file.path()).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(file.forget(&server("crm")).unwrap());
        assert!(!file.forget(&server("crm")).unwrap());
        assert_eq!(file.sign_in(&server("crm"), "https://crm.example/mcp").unwrap(), SignIn::NotSignedIn);
    }

    #[test]
    fn an_api_and_a_server_of_one_name_keep_their_own_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let file = CredentialsFile::at(dir.path().join("credentials.json"));
        let api = Holder::Api("crm".into());
        let token: rmcp::transport::auth::OAuthTokenResponse =
            serde_json::from_value(serde_json::json!({"access_token": "api-token", "token_type": "bearer"})).unwrap();
        let credentials = StoredCredentials::new("client".into(), Some(token), vec![], Some(1));
        futures::executor::block_on(file.store_for(&api, "https://crm.example/v1").save(credentials)).unwrap();
        assert_eq!(file.sign_in(&api, "https://crm.example/v1").unwrap(), SignIn::SignedIn);
        assert_eq!(file.sign_in(&server("crm"), "https://crm.example/v1").unwrap(), SignIn::NotSignedIn);
        kept(&file, "crm", "https://crm.example/mcp");
        let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(file.path()).unwrap()).unwrap();
        assert!(written["apis"]["crm"].is_object() && written["servers"]["crm"].is_object(), "{written}");
        assert!(!file.forget(&server("other")).unwrap());
        assert!(file.forget(&api).unwrap());
        assert_eq!(file.sign_in(&api, "https://crm.example/v1").unwrap(), SignIn::NotSignedIn);
        assert_eq!(file.sign_in(&server("crm"), "https://crm.example/mcp").unwrap(), SignIn::SignedIn);
    }

    #[test]
    fn a_hostile_credentials_file_is_refused_made_private_or_replaced_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.json");
        let file = CredentialsFile::at(&path);
        // A link is not followed, for reading or writing.
        let elsewhere = dir.path().join("elsewhere.json");
        std::fs::write(&elsewhere, "{}").unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        assert!(file.sign_in(&server("a"), "u").unwrap_err().to_string().contains("is a link"));
        assert!(file.forget(&server("a")).unwrap_err().to_string().contains("is a link"));
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "{}");
        std::fs::remove_file(&path).unwrap();
        // Open to others: made private, with a warning.
        kept(&file, "a", "u");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(file.sign_in(&server("a"), "u").unwrap(), SignIn::SignedIn);
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        // Not JSON: read as empty, and replaced by the next save.
        std::fs::write(&path, "not json").unwrap();
        assert_eq!(file.sign_in(&server("a"), "u").unwrap(), SignIn::NotSignedIn);
        kept(&file, "b", "v");
        assert_eq!(file.sign_in(&server("b"), "v").unwrap(), SignIn::SignedIn);
        // Too large, or not a plain file: refused unread.
        std::fs::File::create(&path).unwrap().set_len(MAX_CREDENTIALS_FILE_BYTES + 1).unwrap();
        assert!(file.sign_in(&server("b"), "v").unwrap_err().to_string().contains("larger than"));
        std::fs::remove_file(&path).unwrap();
        nix_mkfifo(&path);
        assert!(file.sign_in(&server("b"), "v").unwrap_err().to_string().contains("not a plain file"));
    }

    #[test]
    fn tokens_that_cannot_be_written_are_said_to_be_unsaved_whether_the_path_is_a_link_or_a_folder() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere.json");
        std::fs::write(&elsewhere, "{}").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        let folder = dir.path().join("folder.json");
        std::fs::create_dir(&folder).unwrap();
        for (path, says) in [(&link, "is a link"), (&folder, "is not a plain file")] {
            let file = CredentialsFile::at(path);
            assert!(file.check_saved(&server("a")).is_ok(), "nothing was saved yet");
            kept(&file, "a", "u");
            let why = file.check_saved(&server("a")).unwrap_err().to_string();
            assert!(why.contains("tokens were NOT saved") && why.contains(says), "{why}");
            // This process still uses them.
            assert_eq!(file.sign_in(&server("a"), "u").unwrap(), SignIn::SignedIn);
        }
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "{}", "a link is not written through");
    }

    #[test]
    fn a_credentials_file_the_workspace_reaches_is_neither_read_nor_written() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("ws");
        std::fs::create_dir(&workspace).unwrap();
        std::os::unix::fs::symlink(&workspace, dir.path().join("into")).unwrap();
        for path in [workspace.join("creds.json"), dir.path().join(".rt/nx/../../ws/creds.json"), dir.path().join("into/c.json")]
        {
            let file = CredentialsFile::at(&path).kept_out_of(&workspace);
            let why = file.check_place().unwrap_err().to_string();
            assert!(why.contains("is inside the workspace"), "{why}");
            assert!(file.sign_in(&server("a"), "u").unwrap_err().to_string().contains("is inside the workspace"));
            kept(&file, "a", "u");
            assert!(file.check_saved(&server("a")).unwrap_err().to_string().contains("is inside the workspace"));
        }
        assert!(!dir.path().join(".rt").exists(), "no folder is made on the way");
        assert_eq!(std::fs::read_dir(&workspace).unwrap().count(), 0, "nothing is written in the workspace");
        let outside = CredentialsFile::at(dir.path().join("out/creds.json")).kept_out_of(&workspace);
        kept(&outside, "a", "u");
        assert!(outside.check_saved(&server("a")).is_ok());
    }

    fn nix_mkfifo(path: &Path) {
        let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo(3) with a NUL-terminated path this test owns.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    }
}
