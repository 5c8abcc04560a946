//! The compiled guest: built-in or from a file, from the build, the cache or compiled now.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;

use super::super::guest_cache::{CACHE_UNUSED_FOR, CACHE_USE_RESOLUTION, cache_file_name, temporary_name};
use super::super::{compile_settings, engine_config};
use super::{BuildCode, GUEST_COMPONENT, GUEST_COMPONENT_SHA256, Origin, compile};

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
        let (_, origin) = compile(&engine, GUEST_COMPONENT, &GUEST_COMPONENT_SHA256, Some(cache.path()), Some(&build)).unwrap();
        assert_eq!(origin, Origin::Compiled);
        let files = cached_files(cache.path());
        assert_eq!(files.len(), 1, "{files:?}");
        assert!(std::fs::read(&files[0]).unwrap() != native, "the other engine's code is not cached");
        let (_, origin) = compile(&engine, GUEST_COMPONENT, &GUEST_COMPONENT_SHA256, Some(cache.path()), Some(&build)).unwrap();
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
    let not_ours = [dir.join("guest-notes.cwasm"), dir.join("notes.txt"), dir.join(format!("guest-{}.wasm", "ab".repeat(16)))];
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
