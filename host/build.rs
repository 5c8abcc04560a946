//! Embeds the conformance cases (`conformance/cases/NAME.js` with `NAME.json`) so
//! `exec-host conformance` runs them wherever the binary is, and digests the built-in guest
//! so a process finds its compiled copy in the cache without hashing 2 MB at every start.

use std::fmt::Write;
use std::path::PathBuf;

fn main() {
    embed_conformance_cases();
    digest_guest_component();
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
    write_out("conformance_cases.rs", &list);
}

/// SHA-256 of `artefacts/exec-guest.wasm`, the bytes `runtime::GUEST_COMPONENT` embeds.
fn digest_guest_component() {
    use sha2::{Digest, Sha256};
    let guest = cargo_dir("CARGO_MANIFEST_DIR").join("artefacts").join("exec-guest.wasm");
    println!("cargo:rerun-if-changed={}", guest.display());
    let bytes = std::fs::read(&guest).unwrap_or_else(|e| panic!("{}: {e}", guest.display()));
    let digest: [u8; 32] = Sha256::digest(&bytes).into();
    write_out("guest_component_sha256.rs", &format!("{digest:?}"));
}

/// A folder cargo names in the build script's environment.
fn cargo_dir(variable: &str) -> PathBuf {
    PathBuf::from(std::env::var_os(variable).unwrap_or_else(|| panic!("cargo sets {variable}")))
}

/// Writes `name` in `OUT_DIR`, where the crate `include!`s it from.
fn write_out(name: &str, text: &str) {
    let out = cargo_dir("OUT_DIR").join(name);
    std::fs::write(&out, text).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}
