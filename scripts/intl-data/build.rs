//! Prepares ICU4X's compiled data for inclusion by the generator.
//!
//! Every `icu_*_data` crate in the dependency graph ships its data as `data/<marker>.rs.data`
//! files, each defining a macro `__impl_<marker>!` that implements `DataProvider` (and, with
//! an `ITER` argument, `IterableDataProvider`) for a given type. For each such file this
//! writes `<MarkerName>.rs` to `OUT_DIR`: the macro, made local to the place that includes
//! it, followed by its invocation on `crate::Baked` with `ITER`. `main.rs` includes one such
//! file per exported marker. It also copies the `icu` crate's LICENSE, which covers the data.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::{env, fs};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=Cargo.lock");

    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"));
    let packages = packages();

    // The data's licence, shipped with the `icu` crate.
    let (_, icu_dir) = packages.iter().find(|(name, _)| name == "icu").expect("icu is a dependency");
    fs::copy(icu_dir.join("LICENSE"), out_dir.join("ICU4X-LICENSE")).expect("copying LICENSE");

    let data_crates = packages.iter().filter(|(name, _)| name.starts_with("icu_") && name.ends_with("_data"));
    let mut written = BTreeMap::<String, PathBuf>::new();
    for (_, crate_dir) in data_crates {
        let data_dir = crate_dir.join("data");
        let mut entries: Vec<_> = fs::read_dir(&data_dir)
            .unwrap_or_else(|e| panic!("reading {}: {e}", data_dir.display()))
            .map(|entry| entry.expect("directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            let Some(stem) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".rs.data")) else {
                continue;
            };
            let marker = marker_name(stem);
            let source = fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            let prepared = prepare(stem, &source);
            fs::write(out_dir.join(format!("{marker}.rs")), prepared).expect("writing OUT_DIR");
            if let Some(previous) = written.insert(marker.clone(), path.clone()) {
                panic!("{marker} comes from both {} and {}", previous.display(), path.display());
            }
        }
    }
    assert!(!written.is_empty(), "found no ICU4X data files");
}

/// The names and source directories of the packages in this package's dependency graph,
/// as Cargo resolved it.
fn packages() -> Vec<(String, PathBuf)> {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = Path::new(&env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo")).join("Cargo.toml");
    let output = Command::new(cargo)
        // Offline and for this platform only: everything it lists is already downloaded.
        .args(["metadata", "--format-version", "1", "--frozen", "--filter-platform"])
        .arg(env::var_os("TARGET").expect("set by cargo"))
        .arg("--manifest-path")
        .arg(&manifest)
        .output()
        .expect("running cargo metadata");
    assert!(output.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&output.stderr));
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let mut packages: Vec<(String, PathBuf)> = metadata["packages"]
        .as_array()
        .expect("packages array")
        .iter()
        .map(|package| {
            let name = package["name"].as_str().expect("name").to_owned();
            let dir = Path::new(package["manifest_path"].as_str().expect("manifest_path"))
                .parent()
                .expect("manifest has a parent directory")
                .to_path_buf();
            (name, dir)
        })
        .collect();
    packages.sort();
    packages
}

/// `decimal_symbols_v1` → `DecimalSymbolsV1`, the marker type's name.
fn marker_name(stem: &str) -> String {
    stem.split('_')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map(|first| first.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
        })
        .collect()
}

/// Rewrites one data file so that it can be included inside a block any number of times
/// alongside the others, and appends the invocation of its macro. Most files are formatted
/// by rustfmt, the largest are not (`macro_rules ! name`), so tokens are compared without
/// spaces.
fn prepare(stem: &str, source: &str) -> String {
    let macro_name = format!("__impl_{stem}");
    let reexport = format!("pubuse{macro_name}asimpl_{stem};");
    let mut out = String::with_capacity(source.len() + 256);
    let mut defines_macro = false;
    for line in source.lines() {
        let tokens: String = line.chars().filter(|c| !c.is_whitespace()).collect();
        // The macro is used right here, so it needs no crate-level export or public alias
        // (which Rust rejects for macros defined by another macro's expansion).
        if tokens == "#[macro_export]" || tokens == "#[doc(inline)]" || tokens == reexport {
            continue;
        }
        defines_macro |= tokens.starts_with(&format!("macro_rules!{macro_name}{{"));
        // Some upstream files misspell `BTreeSet` in their `ITER` arm.
        out.push_str(
            &line
                .replace("collections::BtreeSet", "collections::BTreeSet")
                .replace("collections :: BtreeSet", "collections :: BTreeSet"),
        );
        out.push('\n');
    }
    assert!(defines_macro, "{stem}.rs.data does not define {macro_name}");
    out.push_str(&format!("{macro_name}!(crate::Baked, ITER);\n"));
    out
}
