//! `exec-host conformance`: the WIT-level conformance cases run against a guest component,
//! as a table of which pass, each failure with what differed.

use std::path::Path;
use std::process::ExitCode;

use exec_host::conformance::{Case, Verdict, builtin_cases, cases_in, run_case};
use exec_host::{Sandbox, SandboxOptions};

use crate::UsageError;

/// Runs the cases (those of `dir`, else the built-in ones) whose names contain one of
/// `filter`'s words (every case when it is empty), one after another so no case's timing
/// disturbs another's. Exit status 1 when any fails.
pub(crate) fn run(options: SandboxOptions, dir: Option<&Path>, filter: &[String]) -> Result<ExitCode, UsageError> {
    let cases = match dir {
        Some(dir) => {
            cases_in(dir).map_err(|why| UsageError(format!("the cases cannot be read: {}", exec_host::error_sentence(&why))))?
        }
        None => builtin_cases(),
    };
    let cases: Vec<Case> = cases
        .into_iter()
        .filter(|case| filter.is_empty() || filter.iter().any(|word| case.name.contains(word.as_str())))
        .collect();
    if cases.is_empty() {
        return Err(UsageError("no case matches".into()));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async {
        let sandbox = Sandbox::with_options(options).await.map_err(crate::UsageError::from)?;
        let width = cases.iter().map(|case| case.name.len()).max().unwrap_or(0);
        let line = |text: String| crate::terminal::println(&text);
        line(format!("{:width$}  result", "case"));
        let (mut passed, mut failed) = (0, 0);
        for case in &cases {
            let run = run_case(&sandbox, case).await;
            let note = if case.needs_host_limits() { " (host limits)" } else { "" };
            match run.verdict {
                Verdict::Pass => {
                    passed += 1;
                    line(format!("{:width$}  pass{note}", case.name));
                }
                Verdict::Fail(differences) => {
                    failed += 1;
                    line(format!("{:width$}  FAIL{note}", case.name));
                    for difference in differences {
                        line(format!("{:width$}    {difference}", ""));
                    }
                }
                _ => {
                    failed += 1;
                    line(format!("{:width$}  FAIL: the case has no `expect`", case.name));
                }
            }
        }
        line(format!("{} cases: {passed} passed, {failed} failed", cases.len()));
        Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
    })
}
