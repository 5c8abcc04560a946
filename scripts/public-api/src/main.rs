//! `exec-host-public-api RUSTDOC_JSON`: every public item of the crate the JSON documents,
//! one a line, sorted. Blanket and auto-trait implementations and derived traits are left
//! out: they follow from the items, and would bury a change in noise.

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(json) = std::env::args_os().nth(1) else {
        eprintln!("usage: exec-host-public-api RUSTDOC_JSON");
        return ExitCode::from(2);
    };
    let api = public_api::Builder::from_rustdoc_json(&json)
        .omit_blanket_impls(true)
        .omit_auto_trait_impls(true)
        .omit_auto_derived_impls(true)
        .build();
    match api {
        Ok(api) => {
            for item in api.items() {
                println!("{item}");
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("the public API could not be read from {}: {error}", std::path::Path::new(&json).display());
            ExitCode::FAILURE
        }
    }
}
