//! A gateway follows its `--mcp-config` files while it serves: a server added to a file is
//! started, one removed is closed, one whose entry changed is restarted. `tools/list` stays
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
        running = wanted;
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
