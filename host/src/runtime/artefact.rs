//! The guest component: embedded in the host, pre-initialised and compiled once, and the
//! result cached on disk so later processes only map it (milliseconds, not seconds).
//!
//! The artefact is built from `guest-js/` and `wit/` by `scripts/build-guest` and
//! committed, so building the host needs no WebAssembly C toolchain. Its source hash is
//! committed beside it; a test fails when the sources change without a rebuild.
//!
//! The artefact is pre-initialised when it is built: its `init` already ran, and what it
//! set up is in the component's data ([`preinitialise`]). So the first run on a machine
//! only compiles it.
//!
//! Another guest (any component of the `exec-host:sandbox` world, [`GuestSource::File`])
//! is compiled and cached the same way but not pre-initialised: running its `init` here
//! would run foreign code before any limit applies, so each Exec calls `init` itself,
//! inside the script's budget.

use std::hash::Hasher;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tracing::{debug, warn};
use wasmtime::component::{Component, Instance, Linker, WasmList};
use wasmtime::{Engine, Store};
use wasmtime_wizer::{ComponentInstanceState, Wizer};

use super::ExecState;
use crate::guest;

/// The guest component as built by `scripts/build-guest`, pre-initialised.
pub const GUEST_COMPONENT: &[u8] = include_bytes!("../../artefacts/exec-guest.wasm");

/// SHA-256 of [`GUEST_COMPONENT`], taken when the host is built (`build.rs`).
const GUEST_COMPONENT_SHA256: [u8; 32] = include!(concat!(env!("OUT_DIR"), "/guest_component_sha256.rs"));

/// SHA-256 of the sources the artefact was built from; see `scripts/build-guest`.
pub const GUEST_SOURCES_SHA256: &str = include_str!("../../artefacts/exec-guest.sources-sha256");

/// Bumped when what the cache holds changes meaning (for example how it is initialised).
const CACHE_FORMAT: &str = "exec-host-guest-cache-2";

/// Bytes of a guest component file the host reads; a larger file is refused unread.
pub const MAX_GUEST_COMPONENT_BYTES: u64 = 128 * 1024 * 1024;

/// Which guest component runs the scripts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum GuestSource {
    /// The engine built from this repository's `guest-js/`, embedded in the host.
    #[default]
    Builtin,
    /// Any component of the `exec-host:sandbox` world, read from this file. It is checked
    /// before anything runs: a component, importing nothing outside the contract and the
    /// listed WASI interfaces, exporting `init` and `run` as the world says.
    File(PathBuf),
}

/// A compiled guest, and whether its `init` already ran (pre-initialised) or must run at
/// the start of each Exec.
pub(crate) struct Loaded {
    pub component: Component,
    pub initialised: bool,
}

/// Why the sandbox could not be set up. The cause is the error's source.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    #[error("the WebAssembly engine could not be configured")]
    Engine(#[source] BoxError),
    /// The guest component is not one this host runs; `reason` says why.
    #[error("the guest component {guest} was refused: {reason}")]
    Refused { guest: String, reason: String },
    #[error("the guest component could not be prepared: {step}")]
    Guest {
        step: String,
        #[source]
        source: BoxError,
    },
}

/// An error of any kind, as a source.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

impl SetupError {
    pub(crate) fn engine(error: wasmtime::Error) -> Self {
        SetupError::Engine(error.into())
    }

    /// `source` is refused for `reason`, a sentence about "it".
    pub(crate) fn refused(source: &GuestSource, reason: impl Into<String>) -> Self {
        let guest = match source {
            GuestSource::Builtin => "built into exec-host".to_string(),
            GuestSource::File(path) => format!("`{}`", path.display()),
        };
        SetupError::Refused { guest, reason: reason.into() }
    }

    pub(crate) fn guest(step: &str, error: impl Into<BoxError>) -> Self {
        SetupError::Guest { step: step.to_string(), source: error.into() }
    }
}

/// The directory compiled guests are cached in: `$EXEC_HOST_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/exec-host`, else `~/.cache/exec-host`. `None` when none is known.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("EXEC_HOST_CACHE_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("exec-host"));
    }
    std::env::var_os("HOME").filter(|d| !d.is_empty()).map(|home| PathBuf::from(home).join(".cache").join("exec-host"))
}

/// The ready-to-instantiate guest: from the cache when it holds this exact guest compiled
/// by a compatible engine, else compiled and written to the cache.
pub(crate) fn load(engine: &Engine, source: &GuestSource, cache_dir: Option<&Path>) -> Result<Loaded, SetupError> {
    let (bytes, digest, initialised) = match source {
        // Pre-initialised when it was built (`scripts/build-guest`).
        GuestSource::Builtin => (std::borrow::Cow::Borrowed(GUEST_COMPONENT), GUEST_COMPONENT_SHA256, true),
        GuestSource::File(path) => {
            let bytes = read_guest_file(path).map_err(|why| SetupError::refused(source, why))?;
            let digest = Sha256::digest(&bytes).into();
            (std::borrow::Cow::Owned(bytes), digest, false)
        }
    };
    guest::check_is_component(&bytes).map_err(|why| SetupError::refused(source, why))?;
    let component = compile(engine, &bytes, &digest, cache_dir)?;
    Ok(Loaded { component, initialised })
}

/// Reads a guest component file: a regular file (not a FIFO or a device, which could block
/// or never end) of at most [`MAX_GUEST_COMPONENT_BYTES`]. `Err` says why not.
fn read_guest_file(path: &Path) -> Result<Vec<u8>, String> {
    use crate::text_file::ReadError;
    crate::text_file::read_bytes(path, MAX_GUEST_COMPONENT_BYTES).map_err(|error| match error {
        ReadError::Missing => format!("it cannot be opened ({error})"),
        ReadError::Directory | ReadError::NotRegular => "it is not a regular file".into(),
        // The size, only to say it: the file was refused unread.
        ReadError::TooLarge { limit } => match std::fs::metadata(path) {
            Ok(metadata) if metadata.len() > limit => {
                format!("it takes {} bytes, more than the {limit} a guest component may", metadata.len())
            }
            _ => format!("it grew past {limit} bytes while it was read"),
        },
        other => format!("it cannot be read ({other})"),
    })
}

/// Compiles `bytes`, whose SHA-256 is `digest`, or maps the cached result.
fn compile(engine: &Engine, bytes: &[u8], digest: &[u8; 32], cache_dir: Option<&Path>) -> Result<Component, SetupError> {
    let path = cache_dir.map(|dir| dir.join(format!("guest-{}.cwasm", cache_key(engine, digest))));
    if let Some(path) = &path
        && path.exists()
    {
        match trusted(path) {
            // SAFETY: the file is native code wasmtime maps and runs. `trusted` checked that
            // it is a regular file in a folder, both owned by this user and writable by no
            // one else, so only this user's own processes (`write_cache` below) wrote it;
            // it is keyed by the guest's hash and the engine's compatibility hash, and
            // wasmtime checks its header and refuses incompatible files.
            Ok(()) => match unsafe { Component::deserialize_file(engine, path) } {
                Ok(component) => return Ok(component),
                Err(error) => debug!("ignoring the cached guest {}: {error:#}", path.display()),
            },
            Err(why) => warn!("not using the cached guest {}: {why}", path.display()),
        }
    }
    let compiled = engine.precompile_component(bytes).map_err(|e| SetupError::guest("compiling it failed", e))?;
    if let Some(path) = &path
        && let Err(error) = write_cache(path, &compiled)
    {
        warn!("could not cache the compiled guest at {}: {error}", path.display());
    }
    // SAFETY: these bytes were produced by `precompile_component` on this engine just now.
    unsafe { Component::deserialize(engine, &compiled) }.map_err(|e| SetupError::guest("loading it failed", e))
}

/// The cache's name for a guest whose SHA-256 is `digest`, compiled by `engine`.
fn cache_key(engine: &Engine, digest: &[u8; 32]) -> String {
    let mut hasher = Sha256Hasher(Sha256::new());
    hasher.0.update(CACHE_FORMAT.as_bytes());
    hasher.0.update(digest);
    std::hash::Hash::hash(&engine.precompile_compatibility_hash(), &mut hasher);
    let key = hasher.0.finalize();
    key.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    fn finish(&self) -> u64 {
        0 // only `write` is used
    }
}

/// Whether the cached file at `path` can only have been written by this user: a regular
/// file (not a link), in a folder (not a link either), both owned by this user and not
/// writable by the group or others. Why not, when it cannot.
fn trusted(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let dir = path.parent().unwrap_or(Path::new("."));
    for (what, place) in [("the file", path), ("its folder", dir)] {
        let metadata = std::fs::symlink_metadata(place).map_err(|e| format!("{what} cannot be inspected: {e}"))?;
        let kind_ok = if place == path { metadata.is_file() } else { metadata.is_dir() };
        if !kind_ok {
            return Err(format!("{what} is not a plain {}", if place == path { "file" } else { "folder" }));
        }
        if metadata.uid() != me {
            return Err(format!("{what} belongs to another user (uid {})", metadata.uid()));
        }
        if metadata.mode() & 0o022 != 0 {
            return Err(format!("{what} is writable by other users (mode {:o})", metadata.mode() & 0o7777));
        }
    }
    Ok(())
}

/// Writes the cache file atomically: a reader sees the old file, the new one, or none. The
/// folder is made private to this user when it is created, the file is this user's alone.
fn write_cache(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let temporary = dir.join(format!(".{}.{}.tmp", path.file_name().unwrap_or_default().to_string_lossy(), std::process::id()));
    let mut file = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&temporary)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&temporary, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temporary);
    })
}

/// Runs the guest's `init` once and snapshots the result (wizer), so every Exec starts from
/// an engine that is already set up. `scripts/build-guest` does this when it builds the
/// guest (through `scripts/preinitialise`); the result is the committed artefact. The
/// guest's randomness and clocks are fixed meanwhile, so the same guest always gives the
/// same snapshot.
pub async fn preinitialise(guest: &[u8]) -> Result<Vec<u8>, SetupError> {
    let mut config = wasmtime::Config::new();
    config.wasm_component_model(true);
    let engine = Engine::new(&config).map_err(SetupError::engine)?;
    let mut linker = Linker::new(&engine);
    guest::add_to_linker(&mut linker).map_err(SetupError::engine)?;
    let mut store = Store::new(&engine, super::snapshot_state());
    let mut wizer = Wizer::new();
    wizer.init_func("init").keep_init_func(true);
    let (context, instrumented) =
        wizer.instrument_component(guest).map_err(|e| SetupError::guest("instrumenting it failed", e))?;
    let component = Component::new(&engine, &instrumented).map_err(|e| SetupError::guest("compiling it failed", e))?;
    let instance =
        linker.instantiate_async(&mut store, &component).await.map_err(|e| SetupError::guest("instantiating it failed", e))?;
    let init =
        instance.get_typed_func::<(), ()>(&mut store, "init").map_err(|e| SetupError::guest("it has no init export", e))?;
    if let Err(error) = init.call_async(&mut store, ()).await {
        let printed = String::from_utf8_lossy(&store.data().stderr.contents()).trim().to_string();
        return Err(SetupError::guest(&format!("its init failed ({printed})"), error));
    }
    let mut probe = Probe { store: &mut store, instance };
    wizer.snapshot_component(&context, &mut probe).await.map_err(|e| SetupError::guest("snapshotting it failed", e))
}

/// Lets wizer read the instrumented instance's state.
struct Probe<'a> {
    store: &'a mut Store<ExecState>,
    instance: Instance,
}

impl Probe<'_> {
    async fn call<R>(&mut self, instance: &str, func: &str) -> R
    where
        R: wasmtime::component::ComponentType + wasmtime::component::Lift + Send + Sync + 'static,
    {
        // These exports are added by wizer's own instrumentation of our own artefact; their
        // absence is a bug in this build, not input to handle.
        let (_, exported) = self.instance.get_export(&mut *self.store, None, instance).expect("wizer instrumentation export");
        let (_, func_index) =
            self.instance.get_export(&mut *self.store, Some(&exported), func).expect("wizer instrumentation function");
        let typed = self.instance.get_typed_func::<(), (R,)>(&mut *self.store, func_index).expect("wizer function type");
        typed.call_async(&mut *self.store, ()).await.expect("wizer state read").0
    }
}

impl ComponentInstanceState for Probe<'_> {
    async fn call_func_ret_list_u8(&mut self, instance: &str, func: &str, contents: impl FnOnce(&[u8]) + Send) {
        let list: WasmList<u8> = self.call(instance, func).await;
        contents(list.as_le_slice(&*self.store));
    }

    async fn call_func_ret_s32(&mut self, instance: &str, func: &str) -> i32 {
        self.call(instance, func).await
    }

    async fn call_func_ret_s64(&mut self, instance: &str, func: &str) -> i64 {
        self.call(instance, func).await
    }

    async fn call_func_ret_f32(&mut self, instance: &str, func: &str) -> u32 {
        self.call::<f32>(instance, func).await.to_bits()
    }

    async fn call_func_ret_f64(&mut self, instance: &str, func: &str) -> u64 {
        self.call::<f64>(instance, func).await.to_bits()
    }
}

#[cfg(test)]
mod tests {
    use sha2::{Digest, Sha256};

    use super::{GUEST_COMPONENT, GUEST_COMPONENT_SHA256};

    /// The cache is keyed by this digest: a stale one would map another guest's code.
    #[test]
    fn the_digest_taken_at_build_time_is_the_embedded_guests() {
        let digest: [u8; 32] = Sha256::digest(GUEST_COMPONENT).into();
        assert_eq!(GUEST_COMPONENT_SHA256, digest);
    }
}
