//! Embeds the conformance cases (`conformance/cases/NAME.js` with `NAME.json`) so
//! `exec-host conformance` runs them wherever the binary is; digests the built-in guest so
//! a process finds its compiled copy in the cache without hashing 2 MB at every start; and
//! compiles the built-in guest to native code for this machine, so the first run here maps
//! it instead of compiling it.

use std::fmt::Write;
use std::path::PathBuf;

#[cfg(feature = "precompiled-guest")]
#[path = "src/runtime/compile_settings.rs"]
mod compile_settings;

fn main() {
    embed_conformance_cases();
    let guest = cargo_dir("CARGO_MANIFEST_DIR").join("artefacts").join("exec-guest.wasm");
    println!("cargo:rerun-if-changed={}", guest.display());
    let bytes = std::fs::read(&guest).unwrap_or_else(|e| panic!("{}: {e}", guest.display()));
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

/// SHA-256 of `artefacts/exec-guest.wasm`, the bytes `runtime::GUEST_COMPONENT` embeds.
fn digest_guest_component(guest: &[u8]) {
    use sha2::{Digest, Sha256};
    let digest: [u8; 32] = Sha256::digest(guest).into();
    write_out("guest_component_sha256.rs", format!("{digest:?}").as_bytes());
}

/// `exec-guest.cwasm`: the guest compiled by wasmtime with the runtime's compile settings
/// for this machine's processor, or empty, with the reason in `exec-guest.cwasm.why-not`.
/// The runtime falls back to compiling at first use wherever wasmtime refuses the code (a
/// processor without one of this one's features).
fn compile_guest_component(guest: &[u8]) {
    let (native, why_not) = match compiled(guest) {
        Ok(native) => (native, String::new()),
        Err(why) => (Vec::new(), why),
    };
    write_out("exec-guest.cwasm", &native);
    write_out("exec-guest.cwasm.why-not", why_not.as_bytes());
}

/// The guest's native code, or why it was not compiled here.
fn compiled(guest: &[u8]) -> Result<Vec<u8>, String> {
    // An unoptimised wasmtime would take minutes over it; the first run compiles instead.
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
fn compile_for_this_machine(guest: &[u8]) -> Result<Vec<u8>, String> {
    let engine = wasmtime::Engine::new(&compile_settings::compiler_config()).map_err(|e| format!("no engine here: {e}"))?;
    engine.precompile_component(guest).map_err(|e| {
        // Only a warning: exec-host still works, compiling the guest at first use.
        println!("cargo:warning=the built-in guest could not be compiled when exec-host was built: {e:#}");
        format!("compiling it failed: {e:#}")
    })
}

#[cfg(not(feature = "precompiled-guest"))]
fn compile_for_this_machine(_: &[u8]) -> Result<Vec<u8>, String> {
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
