//! Embeds the conformance cases (`conformance/cases/NAME.js` with `NAME.json`) so
//! `exec-host conformance` runs them wherever the binary is, and digests the built-in guest
//! so a process finds its compiled copy in the cache without hashing 2 MB at every start.

use std::fmt::Write;
use std::path::Path;

fn main() {
    embed_conformance_cases();
    digest_guest_component();
}

fn embed_conformance_cases() {
    let dir = Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("conformance").join("cases");
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
    let out = Path::new(&std::env::var("OUT_DIR").expect("cargo sets it")).join("conformance_cases.rs");
    std::fs::write(&out, list).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}

/// SHA-256 of `artefacts/exec-guest.wasm`, the bytes `runtime::GUEST_COMPONENT` embeds.
fn digest_guest_component() {
    use sha2::{Digest, Sha256};
    let guest = Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("artefacts").join("exec-guest.wasm");
    println!("cargo:rerun-if-changed={}", guest.display());
    let bytes = std::fs::read(&guest).unwrap_or_else(|e| panic!("{}: {e}", guest.display()));
    let digest: [u8; 32] = Sha256::digest(&bytes).into();
    let out = Path::new(&std::env::var("OUT_DIR").expect("cargo sets it")).join("guest_component_sha256.rs");
    std::fs::write(&out, format!("{digest:?}")).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}
