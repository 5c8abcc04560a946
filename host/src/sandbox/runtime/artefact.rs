//! The guest component: embedded in the host, pre-initialised and compiled once, and the
//! result cached on disk so later processes only map it (milliseconds, not seconds; the
//! cache is `guest_cache`, the pre-initialisation `preinitialise`).
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

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tracing::{debug, warn};
use wasmtime::Engine;
use wasmtime::component::Component;

use super::compile_settings;
use super::guest_cache::{cache, cache_file_name, mark_used, trusted};
use crate::sandbox::guest;

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
pub(super) const CACHE_FORMAT: &str = "exec-host-guest-cache-2";

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
    /// The cache file of this guest and engine, when there is a cache folder.
    pub cache_file: Option<PathBuf>,
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
    guest::check_is_component(&bytes).map_err(|why| SetupError::refused(source, why.to_string()))?;
    let (component, origin) = compile(engine, &bytes, &digest, cache_dir, compiled_at_build)?;
    let cache_file = cache_dir.map(|dir| cache_file(engine, &digest, dir));
    Ok(Loaded { component, initialised, origin, digest, cache_file })
}

/// The file in the cache folder `dir` of the guest whose SHA-256 is `digest`, compiled by
/// `engine`.
fn cache_file(engine: &Engine, digest: &[u8; 32], dir: &Path) -> PathBuf {
    dir.join(cache_file_name(&compile_settings::engine_digest(engine), digest))
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
    let path = cache_dir.map(|dir| cache_file(engine, digest, dir));
    let path = path.as_deref();
    if let Some(path) = path
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
                    cache(path, build.native);
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
    cache(path, &compiled);
    // SAFETY: these bytes were produced by `precompile_component` on this engine just now.
    let component =
        unsafe { Component::deserialize(engine, &compiled) }.map_err(|e| SetupError::guest("loading it failed", e))?;
    Ok((component, Origin::Compiled))
}

#[cfg(test)]
mod tests;
