//! `preinitialise-guest GUEST.wasm OUT.wasm`: runs the guest component's `init` once and
//! writes the snapshot (wizer), the artefact the host embeds. `scripts/build-guest` runs it
//! after building the guest; the snapshot is the same bytes wherever it is made.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = args.as_slice() else {
        eprintln!("usage: preinitialise-guest GUEST.wasm OUT.wasm");
        return ExitCode::from(2);
    };
    let guest = match std::fs::read(input) {
        Ok(bytes) => bytes,
        Err(e) => {
            eprintln!("preinitialise-guest: {input}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("preinitialise-guest: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(exec_host::guest::preinitialise(&guest)) {
        Ok(snapshot) => match std::fs::write(output, snapshot) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("preinitialise-guest: {output}: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            let mut message = e.to_string();
            let mut cause = std::error::Error::source(&e);
            while let Some(inner) = cause {
                message.push_str(&format!(": {inner}"));
                cause = inner.source();
            }
            eprintln!("preinitialise-guest: {message}");
            ExitCode::FAILURE
        }
    }
}
