//! One test per case: the WIT-level conformance cases of `conformance/cases`, run through
//! the real guest and this host's runtime (named `wit::NAME`), and the host's own cases of
//! `tests/host-cases`, run through a session (named `host::NAME`).
//!
//! `cargo test --release -p exec-host-tests --test conformance NAME` runs the cases whose
//! name contains `NAME`; `BLESS=1` writes each case's `expect` from what came out.

use std::path::Path;
use std::sync::Arc;

use exec_host::conformance::{Case, Verdict, bless, cases_in, run_case};
use exec_host_tests::host_cases;
use libtest_mimic::{Arguments, Failed, Trial};

fn main() {
    let arguments = Arguments::from_args();
    let runtime = Arc::new(
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a Tokio runtime starts"),
    );
    let blessing = std::env::var_os("BLESS").is_some_and(|value| value == "1");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the tests crate is in the workspace");
    let cases = cases_in(&root.join("conformance").join("cases")).expect("the conformance cases read");
    let mut trials: Vec<Trial> = cases
        .into_iter()
        .map(|case| {
            let runtime = runtime.clone();
            Trial::test(format!("wit::{}", case.name), move || runtime.block_on(wit_case(&case, blessing)))
        })
        .collect();
    trials.extend(host_cases::cases().into_iter().map(|script| {
        let runtime = runtime.clone();
        let name = script.file_stem().unwrap_or_default().to_string_lossy().into_owned();
        Trial::test(format!("host::{name}"), move || {
            runtime.block_on(host_cases::run_case(&script, blessing)).map_err(Failed::from)
        })
    }));
    trials.push(Trial::test("host::format_example_pins_every_field", || {
        host_cases::format_example_pins_every_field().map_err(Failed::from)
    }));
    libtest_mimic::run(&arguments, trials).exit();
}

async fn wit_case(case: &Case, blessing: bool) -> Result<(), Failed> {
    let run = run_case(exec_host_tests::sandbox().await, case).await;
    if blessing {
        return bless(case, &run.observed).map_err(|e| Failed::from(exec_host::error_sentence(&e)));
    }
    match run.verdict {
        Verdict::Pass => Ok(()),
        Verdict::Fail(differences) => Err(format!("{}\n{}", case.about(), differences.join("\n")).into()),
        Verdict::Unblessed => Err("the case has no `expect`; run it with BLESS=1 and review what it wrote".into()),
        _ => Err("an unknown verdict".into()),
    }
}
