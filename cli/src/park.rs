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

use exec_host::state::{SealedStore, StateKey, default_locations, open_store};
use exec_host::{Approval, ApprovalRequest, Approver, BoxFuture, CallOptions, ParkedExec, check_outside_workspace};
use serde_json::{Value, json};

use crate::config::ResumeConfig;
use crate::{UsageError, run};

/// The exit status of a command whose Exec parked.
pub(crate) const PARKED: u8 = 3;

/// Where parked Execs are kept, as the flags say (the defaults otherwise).
#[derive(Clone, Debug)]
pub(crate) struct StoreConfig {
    /// `DIR` or `redis://HOST:PORT[/DB]`; `None`: the default folder.
    pub(crate) location: Option<String>,
    pub(crate) key_file: Option<PathBuf>,
    pub(crate) conversation: Option<String>,
    /// How long a claim on a running Exec lasts unless renewed.
    pub(crate) running_lease: std::time::Duration,
}

impl StoreConfig {
    /// The sealed store these flags name. A key file given must exist; the default one is
    /// made (0600) when it does not. Neither may be inside `workspace`, where scripts read
    /// and write files: a script that read the key could forge what a resume replays.
    /// The places of this store on this machine (its folder, unless it is Redis, and its key
    /// file, given or by default), which a command must never read.
    pub(crate) fn private_places(&self) -> Vec<PathBuf> {
        let defaults = default_locations();
        let location = self.location.clone().or_else(|| defaults.as_ref().map(|(folder, _)| folder.display().to_string()));
        let Some(location) = location else { return Vec::new() };
        self.places(&location, &defaults).into_iter().filter_map(|(_, place)| place).collect()
    }

    /// The store's folder at `location` (unless it is an address) and its key file, each
    /// with what it is.
    fn places(&self, location: &str, defaults: &Option<(PathBuf, PathBuf)>) -> [(&'static str, Option<PathBuf>); 2] {
        let key_file = self.key_file.as_ref().or(defaults.as_ref().map(|(_, file)| file));
        [
            ("the state store folder", (!location.contains("://")).then(|| PathBuf::from(location))),
            ("the state key file", key_file.cloned()),
        ]
    }

    pub(crate) async fn open(&self, workspace: &Path) -> Result<SealedStore, UsageError> {
        let defaults = default_locations();
        let location = match (&self.location, &defaults) {
            (Some(location), _) => location.clone(),
            (None, Some((folder, _))) => folder.display().to_string(),
            (None, None) => {
                return Err(UsageError(
                    "no folder for parked Execs: HOME and XDG_STATE_HOME are unset; give --state-store DIR".into(),
                ));
            }
        };
        for (what, place) in self.places(&location, &defaults) {
            if let Some(Err(inside)) = place.map(|place| check_outside_workspace(&place, workspace)) {
                return Err(UsageError(format!("{what} {inside}; give --state-store and --state-key-file outside it")));
            }
        }
        let key = match (&self.key_file, &defaults) {
            (Some(file), _) => StateKey::read(file)?,
            (None, Some((_, file))) => {
                if let Some(parent) = file.parent() {
                    use std::os::unix::fs::DirBuilderExt;
                    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(parent)?;
                }
                StateKey::read_or_create(file)?
            }
            (None, None) => return Err(UsageError("no state key file: give --state-key-file FILE".into())),
        };
        Ok(SealedStore::new(open_store(&location).await?, key))
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

/// `"paused"` of `--json`: the handle and what it waits for.
pub(crate) fn paused_json(conversation: &str, parked: &ParkedExec) -> Value {
    let approvals: Vec<Value> = parked
        .approvals
        .iter()
        .map(|approval| json!({"id": approval.id, "tool": approval.tool, "input": approval.input, "why": approval.why}))
        .collect();
    json!({"handle": shown_handle(conversation, parked), "approvals": approvals})
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
