//! Embeds the conformance cases (`conformance/cases/NAME.js` with `NAME.json`) so
//! `exec-host conformance` runs them wherever the binary is; copies the built-in guest where
//! the crate embeds it from and digests it, so a process finds its compiled copy in the cache
//! without hashing 2 MB at every start; and compiles it to native code for this machine
//! (feature `precompiled-guest`), so the first run here does not compile it. All three come
//! from one read of the guest's file.

use std::fmt::Write;
use std::path::PathBuf;

#[cfg(feature = "precompiled-guest")]
#[path = "src/sandbox/runtime/compile_settings.rs"]
mod compile_settings;

fn main() {
    embed_conformance_cases();
    let guest = cargo_dir("CARGO_MANIFEST_DIR").join("artefacts").join("exec-guest.wasm");
    println!("cargo:rerun-if-changed={}", guest.display());
    let bytes = std::fs::read(&guest).unwrap_or_else(|e| panic!("{}: {e}", guest.display()));
    write_out("exec-guest.wasm", &bytes);
    digest_guest_component(&bytes);
    compile_guest_component(&bytes);
}

fn embed_conformance_cases() {
    let dir = cargo_dir("CARGO_MANIFEST_DIR").join("conformance").join("cases");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| entry.file_name().to_str().and_then(|name| name.strip_suffix(".js")).map(str::to_string))
        .collect();
    names.sort();
    let mut list = String::from("{\nconst CASES: &[(&str, &str, &str)] = &[\n");
    for name in &names {
        let script = dir.join(format!("{name}.js"));
        let data = dir.join(format!("{name}.json"));
        println!("cargo:rerun-if-changed={}", script.display());
        println!("cargo:rerun-if-changed={}", data.display());
        writeln!(
            list,
            "    ({name:?}, include_str!({:?}), include_str!({:?})),",
            script.display().to_string(),
            data.display().to_string()
        )
        .expect("writing to a string");
    }
    list.push_str("];\nCASES\n}\n");
    write_out("conformance_cases.rs", list.as_bytes());
}

/// SHA-256 of the guest, the bytes `runtime::GUEST_COMPONENT` embeds.
fn digest_guest_component(guest: &[u8]) {
    use sha2::{Digest, Sha256};
    let digest: [u8; 32] = Sha256::digest(guest).into();
    write_out("guest_component_sha256.rs", format!("{digest:?}").as_bytes());
}

/// `exec-guest.cwasm`: the guest compiled by wasmtime with the runtime's compile settings
/// for this machine's processor, and in `exec-guest.cwasm.engine` the digest of the engine
/// that compiled it (`Some([..])`), which the runtime compares with its own before it uses
/// the code. When it was not compiled: an empty file, `None`, and the reason in
/// `exec-guest.cwasm.why-not`; the runtime then compiles the guest at first use.
fn compile_guest_component(guest: &[u8]) {
    let (native, engine, why_not) = match compiled(guest) {
        Ok((native, engine)) => (native, format!("Some({engine:?})"), String::new()),
        Err(why) => (Vec::new(), "None".to_string(), why),
    };
    write_out("exec-guest.cwasm", &native);
    write_out("exec-guest.cwasm.engine", engine.as_bytes());
    write_out("exec-guest.cwasm.why-not", why_not.as_bytes());
}

/// The guest's native code and the compiling engine's digest, or why it was not compiled.
fn compiled(guest: &[u8]) -> Result<(Vec<u8>, [u8; 32]), String> {
    // With an unoptimised wasmtime it would take minutes; the first run compiles instead.
    if std::env::var("OPT_LEVEL").is_ok_and(|level| level == "0") {
        return Err("an unoptimised build".into());
    }
    // Code for this machine would not run on another target.
    if std::env::var("TARGET").ok() != std::env::var("HOST").ok() {
        return Err("a build for another target".into());
    }
    compile_for_this_machine(guest)
}

#[cfg(feature = "precompiled-guest")]
fn compile_for_this_machine(guest: &[u8]) -> Result<(Vec<u8>, [u8; 32]), String> {
    // Only a warning when this fails: exec-host still works, compiling the guest at first use.
    let warn = |why: String| {
        println!("cargo:warning=the built-in guest was not compiled when exec-host was built: {why}");
        why
    };
    let engine = wasmtime::Engine::new(&compile_settings::compiler_config())
        .map_err(|e| warn(format!("no wasmtime engine here ({e:#})")))?;
    let native = engine.precompile_component(guest).map_err(|e| warn(format!("compiling it failed ({e:#})")))?;
    Ok((native, compile_settings::engine_digest(&engine)))
}

#[cfg(not(feature = "precompiled-guest"))]
fn compile_for_this_machine(_: &[u8]) -> Result<(Vec<u8>, [u8; 32]), String> {
    Err("the `precompiled-guest` feature is off".into())
}

/// A folder cargo names in the build script's environment.
fn cargo_dir(variable: &str) -> PathBuf {
    PathBuf::from(std::env::var_os(variable).unwrap_or_else(|| panic!("cargo sets {variable}")))
}

/// Writes `name` in `OUT_DIR`, where the crate `include!`s it from.
fn write_out(name: &str, contents: &[u8]) {
    let out = cargo_dir("OUT_DIR").join(name);
    std::fs::write(&out, contents).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}
