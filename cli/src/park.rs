//! Parking on the command line: where parked Execs are kept (`--state-store`,
//! `--state-key-file`), `run --on-ask park`, and `exec-host resume`.
//!
//! The command line names a parked Exec `CONVERSATION/HANDLE`: the library's handle is good
//! only in its conversation, and a run's conversation is its own unless `--conversation`
//! names one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use exec_host::state::{OpenStoreError, SealedStore, StorePlaces};
use exec_host::{Approval, ApprovalRequest, Approver, BoxFuture, CallOptions, ParkedExec};

use crate::config::ResumeConfig;
use crate::{UsageError, run};

/// The exit status of a command whose Exec parked.
pub(crate) const PARKED: u8 = 3;

/// Where parked Execs are kept, as the flags say (the defaults otherwise).
#[derive(Clone, Debug)]
pub(crate) struct StoreConfig {
    /// `--state-store` and `--state-key-file`.
    pub(crate) places: StorePlaces,
    pub(crate) conversation: Option<String>,
    /// How long a claim on a running Exec lasts unless renewed.
    pub(crate) running_lease: std::time::Duration,
}

impl StoreConfig {
    /// The places of this store on this machine, which a command must never read.
    pub(crate) fn private_places(&self) -> Vec<PathBuf> {
        self.places.private_places()
    }

    /// The sealed store these flags name. A key file given must exist; the default one is
    /// made (0600) when it does not. Neither may be inside `workspace`.
    pub(crate) async fn open(&self, workspace: &Path) -> Result<SealedStore, UsageError> {
        self.places.open(Some(workspace)).await.map_err(|error| match error {
            OpenStoreError::NoDefault { what } => UsageError(format!(
                "no {what} for parked Execs: HOME and XDG_STATE_HOME are unset; give --state-store DIR and --state-key-file FILE"
            )),
            OpenStoreError::InsideWorkspace { .. } => {
                UsageError(format!("{}; give --state-store and --state-key-file outside it", exec_host::error_sentence(&error)))
            }
            other => UsageError::from(other),
        })
    }
}

/// What a call that must ask gets on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum OnAsk {
    /// Ask on the terminal (the default there).
    Prompt,
    /// Park the Exec: it is stored, and `exec-host resume` continues it (exit status 3).
    Park,
    /// Refuse, saying what would let it run (the default off a terminal).
    Refuse,
}

/// The approver `on_ask` asks for, the process's own when it is not given.
pub(crate) fn approver(on_ask: Option<OnAsk>) -> Arc<dyn Approver> {
    match on_ask {
        None => crate::approve::for_this_process(),
        Some(OnAsk::Prompt) => crate::approve::terminal(),
        Some(OnAsk::Park) => Arc::new(Parker),
        Some(OnAsk::Refuse) => crate::approve::nobody("--on-ask refuse was given"),
    }
}

/// Answers every call that must ask by parking its Exec.
struct Parker;

impl Approver for Parker {
    fn approve(&self, _: ApprovalRequest) -> BoxFuture<'static, Approval> {
        Box::pin(std::future::ready(Approval::Park))
    }
}

/// `CONVERSATION/HANDLE`, as the command line names a parked Exec.
pub(crate) fn shown_handle(conversation: &str, parked: &ParkedExec) -> String {
    format!("{conversation}/{}", parked.handle)
}

/// The answers `--approve`, `--approve-always` and `--deny` give, against what the Exec
/// waits for (checked by the session: an id it does not wait for is refused).
#[derive(Clone, Debug, Default)]
pub(crate) struct Answers {
    pub(crate) approve_all: bool,
    pub(crate) approve: Vec<u32>,
    pub(crate) approve_always: Vec<u32>,
    pub(crate) deny: Vec<(u32, String)>,
}

impl Answers {
    /// Reads `--approve ID|all`, `--approve-always ID`, `--deny ID[=REASON]`.
    pub(crate) fn parse(approve: &[String], approve_always: &[u32], deny: &[String]) -> Result<Answers, UsageError> {
        let mut answers = Answers { approve_always: approve_always.to_vec(), ..Answers::default() };
        for given in approve {
            match given.as_str() {
                "all" => answers.approve_all = true,
                id => answers.approve.push(
                    id.parse()
                        .map_err(|_| UsageError(format!("--approve takes an approval id (a number) or `all`, not {id:?}")))?,
                ),
            }
        }
        for given in deny {
            let (id, reason) = given.split_once('=').unwrap_or((given, "denied on the command line"));
            let id = id.parse().map_err(|_| {
                UsageError(format!(
                    "--deny of resume answers a waiting call: it takes ID or ID=REASON, not {given:?}; a permission rule is --deny-rule RULE"
                ))
            })?;
            answers.deny.push((id, reason.to_string()));
        }
        Ok(answers)
    }

    /// The answers by id for an Exec that waits for `waiting`.
    fn by_id(&self, waiting: &[u32]) -> HashMap<u32, Approval> {
        let mut answers = HashMap::new();
        if self.approve_all {
            answers.extend(waiting.iter().map(|id| (*id, Approval::AllowOnce)));
        }
        answers.extend(self.approve.iter().map(|id| (*id, Approval::AllowOnce)));
        answers.extend(self.approve_always.iter().map(|id| (*id, Approval::AllowAlways)));
        answers.extend(self.deny.iter().map(|(id, reason)| (*id, Approval::Deny { reason: reason.clone() })));
        answers
    }
}

/// `exec-host resume CONVERSATION/HANDLE ...`.
pub(crate) fn resume(config: ResumeConfig) -> Result<ExitCode, UsageError> {
    let (handle, answers) = (config.handle, config.answers);
    run::run_exec(config.exec, "resumed", async move |session: &exec_host::Session, options: CallOptions| {
        let waiting: Vec<u32> = session.parked_exec(&handle).await?.approvals.iter().map(|approval| approval.id).collect();
        Ok(session.resume(&handle, answers.by_id(&waiting), options).await?)
    })
}
