//! A gateway follows its `--mcp-config` files while it serves: a server added to a file is
//! started, one removed is closed, one whose entry changed is restarted; an HTTP API (`apis`)
//! added or changed is loaded, its description read again, one removed leaves. `tools/list` stays
//! the same (downstream tools sit behind `Exec`); the next result each client receives
//! carries the new announcement.
//!
//! The files are looked at once a second (their size, modification time and inode); a file
//! that is being written and does not parse yet is retried on the next look, the servers
//! running meanwhile.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use exec_host::mcp::{McpConfig, ServerConfig};
use exec_host::openapi::ApiConfig;
use exec_host::{CancellationToken, Session};

/// How often the files are looked at.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// What a look at one file sees; a change in any part means the file changed.
type Stamp = Option<(u64, u64, Option<SystemTime>)>;

fn stamp(file: &PathBuf) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    let metadata = std::fs::metadata(file).ok()?;
    Some((metadata.ino(), metadata.len(), metadata.modified().ok()))
}

/// Follows `files` (whose servers `running` are) until `stop` is cancelled.
pub async fn follow(session: Session, files: Vec<PathBuf>, mut running: McpConfig, stop: CancellationToken) {
    if files.is_empty() {
        return;
    }
    let mut stamps: Vec<Stamp> = files.iter().map(stamp).collect();
    let mut reported: Option<String> = None;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(LOOK_EVERY) => {}
            _ = stop.cancelled() => return,
        }
        let now: Vec<Stamp> = files.iter().map(stamp).collect();
        if now == stamps {
            continue;
        }
        let read = files.iter().map(|file| Ok((file.clone(), McpConfig::load(file)?))).collect::<Result<Vec<_>, _>>();
        let wanted = match read.and_then(McpConfig::merge) {
            Ok(wanted) => wanted,
            Err(error) => {
                // Said once per broken state, not once a second.
                let message = exec_host::error_sentence(&error);
                if reported.as_ref() != Some(&message) {
                    tracing::warn!("the MCP configuration changed but is not used: {message}; the servers running go on");
                    reported = Some(message);
                }
                continue;
            }
        };
        stamps = now;
        reported = None;
        apply(&session, &running.servers, &wanted.servers).await;
        apply_apis(&session, &mut running.apis, &wanted.apis).await;
        running.servers = wanted.servers;
    }
}

/// Takes out the APIs gone, then loads the new and changed ones, together. An API that
/// cannot be loaded keeps the operations it had (and its old entry in `running`, so it is
/// tried again at the next change of the file).
async fn apply_apis(session: &Session, running: &mut BTreeMap<String, ApiConfig>, wanted: &BTreeMap<String, ApiConfig>) {
    running.retain(|name, _| {
        let kept = wanted.contains_key(name);
        if !kept {
            session.remove_api(name);
            tracing::info!("API `{name}` removed: its entry was removed");
        }
        kept
    });
    let changed: Vec<(&String, &ApiConfig)> =
        wanted.iter().filter(|(name, config)| running.get(*name) != Some(*config)).collect();
    let loads = changed.iter().map(|(name, config)| async move { (*name, *config, session.add_api(name, config).await) });
    for (name, config, loaded) in futures::future::join_all(loads).await {
        match loaded {
            Ok(offered) => {
                tracing::info!("API `{name}` loaded: {offered} operations, its entry was added or changed");
                running.insert(name.clone(), config.clone());
            }
            Err(error) => tracing::warn!("{error}; its operations as they were stay"),
        }
    }
}

/// Closes the servers gone or changed, then starts the new and changed ones, together.
async fn apply(session: &Session, running: &BTreeMap<String, ServerConfig>, wanted: &BTreeMap<String, ServerConfig>) {
    for (name, config) in running {
        if wanted.get(name) != Some(config) {
            session.remove_server(name).await;
            tracing::info!("MCP server `{name}` closed: its entry was removed or changed");
        }
    }
    let starts = wanted.iter().filter(|(name, config)| running.get(*name) != Some(*config)).map(|(name, config)| async move {
        match session.add_server(name, config.clone()).await {
            Ok(_) => tracing::info!("MCP server `{name}` started: its entry was added or changed"),
            Err(error) => tracing::warn!("{error}"),
        }
    });
    futures::future::join_all(starts).await;
}
