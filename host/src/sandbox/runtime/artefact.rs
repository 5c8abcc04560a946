//! The guest component: embedded in the host, pre-initialised and compiled once, and the
//! result cached on disk so later processes only map it (milliseconds, not seconds).
//!
//! The artefact is built from `guest-js/` and `wit/` by `scripts/build-guest` and
//! committed, so building the host needs no WebAssembly C toolchain. Its source hash is
//! committed beside it; a test fails when the sources change without a rebuild.
//!
//! The artefact is pre-initialised when it is built: its `init` already ran, and what it
//! set up is in the component's data ([`preinitialise`]). And it is compiled to native code
//! when exec-host itself is built (`build.rs`, for the build machine's processor): a first
//! run on that machine, or on any whose processor has the same features, writes that code
//! to the cache instead of compiling. Elsewhere the first run compiles it (about a second
//! on two cores).
//!
//! Another guest (any component of the `exec-host:sandbox` world, [`GuestSource::File`])
//! is compiled and cached the same way but not pre-initialised: running its `init` here
//! would run foreign code before any limit applies, so each Exec calls `init` itself,
//! inside the script's budget.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};
use tracing::{debug, warn};
use wasmtime::component::{Component, Instance, Linker, WasmList};
use wasmtime::{Engine, Store};
use wasmtime_wizer::{ComponentInstanceState, Wizer};

use super::{ExecState, compile_settings};
use crate::sandbox::guest;
use crate::support::dirs::{self, BaseDir};
use crate::support::private::{self, Kind, Others};

/// The guest component as built by `scripts/build-guest`, pre-initialised
/// (`artefacts/exec-guest.wasm`, as `build.rs` read it).
pub const GUEST_COMPONENT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/exec-guest.wasm"));

/// SHA-256 of [`GUEST_COMPONENT`], taken when the host is built (`build.rs`).
const GUEST_COMPONENT_SHA256: [u8; 32] = include!(concat!(env!("OUT_DIR"), "/guest_component_sha256.rs"));

/// Native code compiled when exec-host was built, and the digest
/// ([`compile_settings::engine_digest`]) of the engine that compiled it: only an engine with
/// the same digest uses it.
pub(crate) struct BuildCode {
    pub native: &'static [u8],
    pub engine: [u8; 32],
}

/// [`GUEST_COMPONENT`] compiled by `build.rs`, for the build machine's processor; `None`
/// when it was not compiled then.
const GUEST_COMPILED_AT_BUILD: Option<BuildCode> = match GUEST_COMPILED_AT_BUILD_BY {
    Some(engine) => Some(BuildCode { native: include_bytes!(concat!(env!("OUT_DIR"), "/exec-guest.cwasm")), engine }),
    None => None,
};
const GUEST_COMPILED_AT_BUILD_BY: Option<[u8; 32]> = include!(concat!(env!("OUT_DIR"), "/exec-guest.cwasm.engine"));

/// Why [`GUEST_COMPILED_AT_BUILD`] is `None` (for example "an unoptimised build"), or "".
const GUEST_NOT_COMPILED_AT_BUILD: &str = include_str!(concat!(env!("OUT_DIR"), "/exec-guest.cwasm.why-not"));

/// SHA-256 of the sources the artefact was built from; see `scripts/build-guest`.
pub const GUEST_SOURCES_SHA256: &str = include_str!("../../../artefacts/exec-guest.sources-sha256");

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
    pub origin: Origin,
    /// The SHA-256 of the component's bytes: which guest a parked Exec ran in.
    pub digest: [u8; 32],
}

/// Where a loaded guest's native code came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Mapped from the cache.
    Cache,
    /// Compiled when exec-host was built ([`GUEST_COMPILED_AT_BUILD`]).
    Build,
    /// Compiled by this process.
    Compiled,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Origin::Cache => "mapped from the cache",
            Origin::Build => "compiled when exec-host was built",
            Origin::Compiled => "compiled now",
        })
    }
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
    dirs::folder_from("EXEC_HOST_CACHE_DIR").or_else(|| BaseDir::Cache.exec_host())
}

/// The ready-to-instantiate guest: from the cache when it holds this exact guest compiled
/// by a compatible engine, else (the built-in guest) the code compiled when exec-host was
/// built, else compiled now; either of those is written to the cache.
pub(crate) fn load(engine: &Engine, source: &GuestSource, cache_dir: Option<&Path>) -> Result<Loaded, SetupError> {
    let (bytes, digest, initialised, compiled_at_build) = match source {
        // Pre-initialised when it was built (`scripts/build-guest`).
        GuestSource::Builtin => {
            if GUEST_COMPILED_AT_BUILD.is_none() {
                debug!("the built-in guest was not compiled when exec-host was built: {GUEST_NOT_COMPILED_AT_BUILD}");
            }
            (std::borrow::Cow::Borrowed(GUEST_COMPONENT), GUEST_COMPONENT_SHA256, true, GUEST_COMPILED_AT_BUILD.as_ref())
        }
        GuestSource::File(path) => {
            let bytes = read_guest_file(path).map_err(|why| SetupError::refused(source, why))?;
            let digest = Sha256::digest(&bytes).into();
            (std::borrow::Cow::Owned(bytes), digest, false, None)
        }
    };
    guest::check_is_component(&bytes).map_err(|why| SetupError::refused(source, why))?;
    let (component, origin) = compile(engine, &bytes, &digest, cache_dir, compiled_at_build)?;
    Ok(Loaded { component, initialised, origin, digest })
}

/// Reads a guest component file: a regular file (not a FIFO or a device, which could block
/// or never end) of at most [`MAX_GUEST_COMPONENT_BYTES`]. `Err` says why not.
fn read_guest_file(path: &Path) -> Result<Vec<u8>, String> {
    use crate::support::text_file::ReadError;
    crate::support::text_file::read_bytes(path, MAX_GUEST_COMPONENT_BYTES).map_err(|error| match error {
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

/// The native code of `bytes`, whose SHA-256 is `digest`: mapped from the cache; else
/// `compiled_at_build` (the same component compiled when exec-host was built) if an engine
/// with this engine's digest compiled it and wasmtime accepts it, written to the cache; else
/// compiled now and written to the cache.
fn compile(
    engine: &Engine,
    bytes: &[u8],
    digest: &[u8; 32],
    cache_dir: Option<&Path>,
    compiled_at_build: Option<&BuildCode>,
) -> Result<(Component, Origin), SetupError> {
    let engine_digest = compile_settings::engine_digest(engine);
    let path = cache_dir.map(|dir| dir.join(cache_file_name(&engine_digest, digest)));
    if let Some(path) = &path
        && path.exists()
    {
        match trusted(path) {
            // SAFETY: the file is native code wasmtime maps and runs. `trusted` checked that
            // it is a regular file in a folder, both owned by this user and writable by no
            // one else, so only this user's own processes (`write_cache` below) wrote it;
            // it is keyed by the guest's hash and the engine's compatibility hash, and
            // wasmtime checks its header and refuses incompatible files.
            Ok(modified) => match unsafe { Component::deserialize_file(engine, path) } {
                Ok(component) => {
                    mark_used(path, modified);
                    return Ok((component, Origin::Cache));
                }
                Err(error) => debug!("ignoring the cached guest {}: {error:#}", path.display()),
            },
            Err(why) => warn!("not using the cached guest {}: {why}", path.display()),
        }
    }
    match compiled_at_build {
        Some(build) if build.engine != engine_digest => {
            // Another processor's features, or settings that differ: this machine gets
            // code compiled for it.
            debug!("compiling the guest: the code compiled when exec-host was built is for another engine or processor");
        }
        Some(build) => {
            // SAFETY: these bytes are part of this binary: `build.rs` produced them with
            // `precompile_component` of this wasmtime, from the component this binary
            // embeds, on an engine whose digest (its compile settings, the processor
            // features it compiled for, wasmtime's version) is this engine's. wasmtime
            // checks the header, the settings and this processor's features again, and
            // refuses the bytes otherwise.
            match unsafe { Component::deserialize(engine, build.native) } {
                Ok(component) => {
                    cache(path.as_deref(), build.native);
                    return Ok((component, Origin::Build));
                }
                Err(error) => {
                    debug!("compiling the guest: the code compiled when exec-host was built does not run here ({error:#})")
                }
            }
        }
        None => {}
    }
    let compiled = engine.precompile_component(bytes).map_err(|e| SetupError::guest("compiling it failed", e))?;
    cache(path.as_deref(), &compiled);
    // SAFETY: these bytes were produced by `precompile_component` on this engine just now.
    let component =
        unsafe { Component::deserialize(engine, &compiled) }.map_err(|e| SetupError::guest("loading it failed", e))?;
    Ok((component, Origin::Compiled))
}

/// Writes a compiled guest to the cache file `path`, if there is one. A failure is only
/// worth a warning: the next run loads the guest the same way again.
fn cache(path: Option<&Path>, compiled: &[u8]) {
    let Some(path) = path else { return };
    match write_cache(path, compiled) {
        Ok(()) => prune_cache(path),
        Err(error) => warn!("could not cache the compiled guest at {}: {error}", path.display()),
    }
}

/// A cached guest that no process has mapped for this long is removed the next time another
/// guest is cached: each upgrade of exec-host (and each guest given as a file) caches 5 MB
/// of native code, and nothing else would ever remove the old ones.
const CACHE_UNUSED_FOR: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// A cached guest's modification time says when it was last used, to within this: a
/// process that maps it refreshes the time only when it is older, so most runs write nothing.
const CACHE_USE_RESOLUTION: Duration = Duration::from_secs(24 * 60 * 60);

/// Entries of the cache folder that one pruning looks at; a folder with more (the cache is
/// this user's own, but `EXEC_HOST_CACHE_DIR` may name any folder) is pruned in part.
const CACHE_PRUNE_SCAN: usize = 10_000;

/// Records that the cached guest at `path`, last modified at `modified`, was used now (see
/// [`CACHE_USE_RESOLUTION`]). A failure only makes the file look older.
fn mark_used(path: &Path, modified: SystemTime) {
    let now = SystemTime::now();
    if now.duration_since(modified).is_ok_and(|age| age < CACHE_USE_RESOLUTION) {
        return;
    }
    let touched = std::fs::OpenOptions::new().append(true).open(path).and_then(|file| file.set_modified(now));
    if let Err(error) = touched {
        debug!("could not mark the cached guest {} as used: {error}", path.display());
    }
}

/// Removes from the folder of `kept` (a guest just cached) the cached guests unused for
/// [`CACHE_UNUSED_FOR`], and the temporary files of writes that died, older than
/// [`CACHE_USE_RESOLUTION`]. Only this user's own regular files with the cache's names are
/// removed, and only from a folder that is this user's alone.
fn prune_cache(kept: &Path) {
    let dir = kept.parent().unwrap_or(Path::new("."));
    if let Err(why) = owned_privately(dir, Kind::Folder) {
        debug!("not pruning the guest cache {}: its folder {why}", dir.display());
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let now = SystemTime::now();
    for entry in entries.take(CACHE_PRUNE_SCAN).flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let unused_for = if is_cached_guest(name) {
            CACHE_UNUSED_FOR
        } else if is_temporary(name) {
            CACHE_USE_RESOLUTION
        } else {
            continue;
        };
        let path = entry.path();
        if path == kept {
            continue;
        }
        let Ok(modified) = owned_privately(&path, Kind::File) else { continue };
        if now.duration_since(modified).is_ok_and(|age| age > unused_for) {
            match std::fs::remove_file(&path) {
                Ok(()) => debug!("removed {}, unused for more than {} days", path.display(), unused_for.as_secs() / 86_400),
                Err(error) => debug!("could not remove {}: {error}", path.display()),
            }
        }
    }
}

/// The cache's file name for a guest whose SHA-256 is `digest`, compiled by an engine whose
/// digest is `engine`: `guest-<key>.cwasm`.
fn cache_file_name(engine: &[u8; 32], digest: &[u8; 32]) -> String {
    let key = Sha256::new().chain_update(CACHE_FORMAT.as_bytes()).chain_update(digest).chain_update(engine).finalize();
    let key = crate::support::hex::hex(&key[..CACHE_KEY_BYTES.min(key.len())]);
    format!("{CACHED_GUEST_PREFIX}{key}{CACHED_GUEST_SUFFIX}")
}

const CACHED_GUEST_PREFIX: &str = "guest-";
const CACHED_GUEST_SUFFIX: &str = ".cwasm";
/// Bytes of the SHA-256 a cached guest's name keeps, in hexadecimal.
const CACHE_KEY_BYTES: usize = 16;

/// Whether `name` is one [`cache_file_name`] gives.
fn is_cached_guest(name: &str) -> bool {
    name.strip_prefix(CACHED_GUEST_PREFIX)
        .and_then(|rest| rest.strip_suffix(CACHED_GUEST_SUFFIX))
        .is_some_and(|key| key.len() == 2 * CACHE_KEY_BYTES && key.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The name [`write_cache`] writes the cached guest `name` under before it is whole:
/// hidden, and this process's own.
fn temporary_name(name: &str) -> String {
    format!(".{name}.{}.tmp", std::process::id())
}

/// Whether `name` is one [`temporary_name`] gives, in any process.
fn is_temporary(name: &str) -> bool {
    name.strip_prefix('.')
        .and_then(|rest| rest.strip_suffix(".tmp"))
        .and_then(|rest| rest.rsplit_once('.'))
        .is_some_and(|(cached, pid)| is_cached_guest(cached) && !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether the cached file at `path` can only have been written by this user: a regular
/// file (not a link), in a folder (not a link either), both owned by this user and not
/// writable by the group or others. The file's modification time when it can; why not,
/// when it cannot.
fn trusted(path: &Path) -> Result<SystemTime, String> {
    let dir = path.parent().unwrap_or(Path::new("."));
    owned_privately(dir, Kind::Folder).map_err(|why| format!("its folder {why}"))?;
    owned_privately(path, Kind::File).map_err(|why| format!("the file {why}"))
}

/// [`private::owned_privately`] for the cache, whose files others may read: the time the
/// place was last modified when it passes.
fn owned_privately(place: &Path, kind: Kind) -> Result<SystemTime, String> {
    let metadata = private::owned_privately(place, kind, Others::MayRead)?;
    metadata.modified().map_err(|e| format!("has no modification time: {e}"))
}

/// Writes the cache file atomically: a reader sees the old file, the new one, or none. The
/// folder is made private to this user when it is created, and written only when it is this
/// user's alone (the check that guards mapping: anyone who can write the folder could plant
/// a link at the temporary name, and the write would follow it); the temporary file is
/// created new, never through a link, and is this user's alone.
fn write_cache(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    owned_privately(dir, Kind::Folder)
        .map_err(|why| std::io::Error::new(std::io::ErrorKind::PermissionDenied, format!("its folder {why}")))?;
    let temporary = dir.join(temporary_name(&path.file_name().unwrap_or_default().to_string_lossy()));
    // Left by a write of this process id that died: only this user could have put it here.
    let _ = std::fs::remove_file(&temporary);
    let mut file =
        std::fs::OpenOptions::new().write(true).create_new(true).custom_flags(libc::O_NOFOLLOW).mode(0o600).open(&temporary)?;
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
    use std::path::{Path, PathBuf};

    use sha2::{Digest, Sha256};
    use wasmtime::Engine;

    use super::super::{compile_settings, engine_config};
    use super::{
        BuildCode, CACHE_UNUSED_FOR, CACHE_USE_RESOLUTION, GUEST_COMPONENT, GUEST_COMPONENT_SHA256, Origin, cache_file_name,
        compile, temporary_name,
    };

    /// The cache is keyed by this digest: a stale one would map another guest's code.
    #[test]
    fn the_digest_taken_at_build_time_is_the_embedded_guests() {
        let digest: [u8; 32] = Sha256::digest(GUEST_COMPONENT).into();
        assert_eq!(GUEST_COMPONENT_SHA256, digest);
    }

    fn engine() -> Engine {
        Engine::new(&engine_config(1)).unwrap()
    }

    fn cached_files(dir: &Path) -> Vec<PathBuf> {
        std::fs::read_dir(dir).unwrap().map(|entry| entry.unwrap().path()).collect()
    }

    /// What the runtime adds to the compile settings (stacks, the pool, the profiler) does
    /// not change the code: an engine that only has the compile settings, as `build.rs`
    /// makes, compiles alike. A setting that shapes code belongs in `compile_settings`.
    #[test]
    fn the_runtime_engine_compiles_as_the_build_engine_does() {
        let build = Engine::new(&compile_settings::compiler_config()).unwrap();
        assert_eq!(compile_settings::engine_digest(&engine()), compile_settings::engine_digest(&build));
    }

    /// A build for this machine carries the guest's native code, compiled by an engine like
    /// the runtime's, and a first run writes it to the cache instead of compiling.
    #[cfg(feature = "precompiled-guest")]
    #[test]
    fn a_first_run_on_the_build_machine_takes_the_code_compiled_at_build_time() {
        use super::{GUEST_COMPILED_AT_BUILD, GUEST_NOT_COMPILED_AT_BUILD, GuestSource, load};
        if GUEST_NOT_COMPILED_AT_BUILD == "an unoptimised build" {
            return;
        }
        let build = GUEST_COMPILED_AT_BUILD.as_ref().unwrap_or_else(|| panic!("not compiled: {GUEST_NOT_COMPILED_AT_BUILD}"));
        let engine = engine();
        assert_eq!(build.engine, compile_settings::engine_digest(&engine));
        let cache = tempfile::tempdir().unwrap();
        let first = load(&engine, &GuestSource::Builtin, Some(cache.path())).unwrap();
        assert_eq!((first.origin, first.initialised), (Origin::Build, true));
        let files = cached_files(cache.path());
        assert_eq!(files.len(), 1, "{files:?}");
        assert!(std::fs::read(&files[0]).unwrap() == build.native, "the cache holds the build's code");
        assert_eq!(load(&engine, &GuestSource::Builtin, Some(cache.path())).unwrap().origin, Origin::Cache);
        // Without a cache the build's code is used from memory.
        assert_eq!(load(&engine, &GuestSource::Builtin, None).unwrap().origin, Origin::Build);
    }

    /// Code from the build that is not for this engine is never run, whether the engine's
    /// digest says so (other settings, or a processor with other features) or, should the
    /// digest claim otherwise, wasmtime's own check does: the guest is compiled, and what is
    /// cached is the new code.
    #[test]
    fn code_from_the_build_for_another_engine_is_replaced_by_compiling() {
        let engine = engine();
        // Without the budget's epoch checks.
        let mut other_settings = compile_settings::compiler_config();
        other_settings.epoch_interruption(false);
        let other = Engine::new(&other_settings).unwrap();
        let native: &'static [u8] = other.precompile_component(GUEST_COMPONENT).unwrap().leak();
        let honest = BuildCode { native, engine: compile_settings::engine_digest(&other) };
        let forged = BuildCode { native, engine: compile_settings::engine_digest(&engine) };
        for build in [honest, forged] {
            let cache = tempfile::tempdir().unwrap();
            let (_, origin) =
                compile(&engine, GUEST_COMPONENT, &GUEST_COMPONENT_SHA256, Some(cache.path()), Some(&build)).unwrap();
            assert_eq!(origin, Origin::Compiled);
            let files = cached_files(cache.path());
            assert_eq!(files.len(), 1, "{files:?}");
            assert!(std::fs::read(&files[0]).unwrap() != native, "the other engine's code is not cached");
            let (_, origin) =
                compile(&engine, GUEST_COMPONENT, &GUEST_COMPONENT_SHA256, Some(cache.path()), Some(&build)).unwrap();
            assert_eq!(origin, Origin::Cache);
        }
    }

    /// Sets the modification time of `path` to `age` ago.
    fn age(path: &Path, age: std::time::Duration) {
        let file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
        file.set_modified(std::time::SystemTime::now() - age).unwrap();
    }

    fn modified(path: &Path) -> std::time::SystemTime {
        std::fs::metadata(path).unwrap().modified().unwrap()
    }

    /// Caching a guest removes the cached guests nobody used for a month and the leftovers
    /// of writes that died; it keeps recent guests, whatever is not the cache's, and the
    /// files in a folder others can write.
    #[test]
    fn caching_a_guest_removes_the_cached_guests_unused_for_a_month() {
        use std::os::unix::fs::PermissionsExt;
        let engine = engine();
        let cache = tempfile::tempdir().unwrap();
        let dir = cache.path();
        let old_guest = dir.join(format!("guest-{}.cwasm", "ab".repeat(16)));
        let recent_guest = dir.join(format!("guest-{}.cwasm", "cd".repeat(16)));
        let dead_write = dir.join(format!(".guest-{}.cwasm.4242.tmp", "ef".repeat(16)));
        let not_ours =
            [dir.join("guest-notes.cwasm"), dir.join("notes.txt"), dir.join(format!("guest-{}.wasm", "ab".repeat(16)))];
        let a_month = CACHE_UNUSED_FOR + CACHE_USE_RESOLUTION;
        for path in [&old_guest, &recent_guest, &dead_write].into_iter().chain(&not_ours) {
            std::fs::write(path, b"old").unwrap();
            age(path, a_month);
        }
        age(&recent_guest, CACHE_UNUSED_FOR / 2);
        // A folder inside is neither removed nor entered.
        let inner = dir.join(format!("guest-{}.cwasm", "01".repeat(16)));
        std::fs::create_dir(&inner).unwrap();

        let (_, origin) = compile(&engine, GUEST_COMPONENT, &GUEST_COMPONENT_SHA256, Some(dir), None).unwrap();
        assert_eq!(origin, Origin::Compiled);
        assert!(!old_guest.exists() && !dead_write.exists(), "{:?}", cached_files(dir));
        assert!(recent_guest.exists() && inner.is_dir() && not_ours.iter().all(|p| p.exists()));
        assert_eq!(cached_files(dir).len(), 6, "and the new guest is cached");

        // In a folder others may write, nothing is removed (nor is the cache mapped there).
        let shared = tempfile::tempdir().unwrap();
        let stale = shared.path().join(format!("guest-{}.cwasm", "ab".repeat(16)));
        std::fs::write(&stale, b"old").unwrap();
        age(&stale, a_month);
        std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        compile(&engine, GUEST_COMPONENT, &GUEST_COMPONENT_SHA256, Some(shared.path()), None).unwrap();
        assert!(stale.exists());
    }

    /// A cache folder others can write is not written either: a link planted there at the
    /// temporary file's name would carry the write wherever it points.
    #[test]
    fn a_cache_folder_others_can_write_is_never_written() {
        use std::os::unix::fs::PermissionsExt;
        let engine = engine();
        let root = tempfile::tempdir().unwrap();
        let (shared, victim) = (root.path().join("shared"), root.path().join("victim"));
        std::fs::create_dir(&shared).unwrap();
        std::fs::write(&victim, b"precious").unwrap();
        let name = cache_file_name(&compile_settings::engine_digest(&engine), &GUEST_COMPONENT_SHA256);
        std::os::unix::fs::symlink(&victim, shared.join(temporary_name(&name))).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
        compile(&engine, GUEST_COMPONENT, &GUEST_COMPONENT_SHA256, Some(&shared), None).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(!shared.join(&name).exists(), "nothing is cached there");

        // In a private folder, a link left at the temporary name is not followed either.
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o700)).unwrap();
        compile(&engine, GUEST_COMPONENT, &GUEST_COMPONENT_SHA256, Some(&shared), None).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(shared.join(&name).is_file(), "the guest is cached");
    }

    /// Mapping a cached guest refreshes its time once it is a day old, so a guest in use is
    /// never pruned, and a run on the same day writes nothing.
    #[test]
    fn mapping_a_cached_guest_marks_it_used() {
        let engine = engine();
        let cache = tempfile::tempdir().unwrap();
        compile(&engine, GUEST_COMPONENT, &GUEST_COMPONENT_SHA256, Some(cache.path()), None).unwrap();
        let files = cached_files(cache.path());
        assert_eq!(files.len(), 1, "{files:?}");
        let cached = &files[0];

        age(cached, CACHE_USE_RESOLUTION / 2);
        let hours_ago = modified(cached);
        let (_, origin) = compile(&engine, GUEST_COMPONENT, &GUEST_COMPONENT_SHA256, Some(cache.path()), None).unwrap();
        assert_eq!(origin, Origin::Cache);
        assert_eq!(modified(cached), hours_ago, "used the same day: not written");

        age(cached, CACHE_UNUSED_FOR);
        let (_, origin) = compile(&engine, GUEST_COMPONENT, &GUEST_COMPONENT_SHA256, Some(cache.path()), None).unwrap();
        assert_eq!(origin, Origin::Cache);
        let since = std::time::SystemTime::now().duration_since(modified(cached)).unwrap_or_default();
        assert!(since < CACHE_USE_RESOLUTION, "marked used: modified {since:?} ago");
    }
}
