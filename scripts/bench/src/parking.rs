//! The parking benchmarks: what a parked Exec costs to store, to park and to resume (in the
//! same session, in a fresh session from the folder store, through Redis, in a new process),
//! and beside them the baseline a replay-from-the-start design pays: the same script run
//! again with every call made again.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use exec_host::settings::Layer;
use exec_host::state::{DirectoryStore, SealedStore, StateKey, StateStore, open_store};
use exec_host::{Approval, CallOptions, CancellationToken, ParkedExec, Session, ToolResult};
use exec_host_tests::redis::RedisServer;
use exec_host_tests::{Counter, Harness, SharedApprover, TestApprover, exec_call};
use serde_json::json;
use tokio::sync::OnceCell;

/// Parks at its first call.
const TRIVIAL: &str = "return await tools.count({})";

/// Ten calls of 1 KB, then one that parks.
const TEN_1KB: &str = "let n = 0;\nfor (let i = 0; i < 10; i++) n += (await tools.blob({ bytes: 1024 })).length;\nreturn n + await tools.count({});";

/// A hundred calls of 10 KB, then one that parks.
const HUNDRED_10KB: &str = "let n = 0;\nfor (let i = 0; i < 100; i++) n += (await tools.blob({ bytes: 10240 })).length;\nreturn n + await tools.count({});";

/// The sessions of the parking benchmarks, made on first use.
pub struct Parking {
    _dir: tempfile::TempDir,
    folder: std::path::PathBuf,
    /// Where Execs park, on the folder store.
    first: Session,
    /// Another session on the same store and conversation (as another process would be).
    second: Session,
    /// Two sessions sharing one Redis.
    redis: (RedisServer, Session, Session),
    /// The same tools, `count` allowed: the script run from the start, every call made again.
    baseline: Session,
}

static PARKING: OnceCell<Parking> = OnceCell::const_new();

async fn session(dir: &Path, counter: &Counter, store: Option<&SealedStore>) -> Result<Session> {
    let rules = match store {
        Some(_) => json!({"permissions": {"ask": ["count"]}}),
        None => json!({}),
    };
    let approver = Arc::new(SharedApprover(TestApprover::new(|_| Approval::Park)));
    let mut builder = Harness::builder(dir, counter)
        .await
        .managed_settings(Layer::from_value(rules)?)
        .approver(approver)
        .tool(exec_host_tests::hop_tool())
        .limits(exec_host::Limits::default().with_max_calls(1_000));
    if let Some(store) = store {
        builder = builder.state_store(store.clone()).conversation("bench");
    }
    Ok(builder.build().await?)
}

impl Parking {
    pub async fn get() -> Result<&'static Parking> {
        PARKING.get_or_try_init(Self::new).await
    }

    async fn new() -> Result<Parking> {
        let dir = tempfile::tempdir()?;
        let counter = Counter::default();
        let folder = dir.path().join("state");
        let raw: Arc<dyn StateStore> = Arc::new(DirectoryStore::open(&folder)?);
        let store = SealedStore::new(raw, StateKey::generate()?);
        let server = RedisServer::start();
        let key = StateKey::generate()?;
        let shared = SealedStore::new(open_store(&server.url(0)).await?, key);
        Ok(Parking {
            first: session(dir.path(), &counter, Some(&store)).await?,
            second: session(dir.path(), &counter, Some(&store)).await?,
            redis: (
                server,
                session(dir.path(), &counter, Some(&shared)).await?,
                session(dir.path(), &counter, Some(&shared)).await?,
            ),
            baseline: session(dir.path(), &counter, None).await?,
            folder,
            _dir: dir,
        })
    }

    /// Bytes the folder store holds now.
    fn stored_bytes(&self) -> u64 {
        std::fs::read_dir(&self.folder)
            .map(|entries| entries.flatten().filter_map(|entry| entry.metadata().ok()).map(|m| m.len()).sum())
            .unwrap_or(0)
    }
}

async fn park(session: &Session, code: &str) -> Result<(ParkedExec, f64)> {
    let started = Instant::now();
    let result = session.call(exec_call(code), CancellationToken::new()).await;
    let us = started.elapsed().as_secs_f64() * 1e6;
    match result.parked {
        Some(parked) => Ok((parked, us)),
        None => bail!("the Exec did not park: {}", result.text()),
    }
}

async fn resume(session: &Session, parked: &ParkedExec) -> Result<(ToolResult, f64)> {
    let answers: HashMap<u32, Approval> = parked.approvals.iter().map(|a| (a.id, Approval::AllowOnce)).collect();
    let started = Instant::now();
    let result = session.resume(&parked.handle, answers, CallOptions::new(CancellationToken::new())).await?;
    let us = started.elapsed().as_secs_f64() * 1e6;
    if !result.ok() {
        bail!("the resumed Exec failed: {}", result.text());
    }
    Ok((result, us))
}

/// One sample of `name`: microseconds, and the extras the line reports.
pub async fn sample(name: &str, binary: &Path, workdir: &Path) -> Result<(f64, BTreeMap<&'static str, f64>)> {
    let parking = Parking::get().await?;
    let mut extra = BTreeMap::new();
    let us = match name {
        "park_trivial" | "park_after_10_calls" | "park_after_100_calls" => {
            let code = match name {
                "park_trivial" => TRIVIAL,
                "park_after_10_calls" => TEN_1KB,
                _ => HUNDRED_10KB,
            };
            let (parked, us) = park(&parking.first, code).await?;
            extra.insert("stored_bytes", parking.stored_bytes() as f64);
            parking.first.discard_parked(&parked.handle).await?;
            us
        }
        "resume_same_session" => {
            let (parked, _) = park(&parking.first, TEN_1KB).await?;
            resume(&parking.first, &parked).await?.1
        }
        "resume_fresh_session" => {
            let (parked, _) = park(&parking.first, TEN_1KB).await?;
            resume(&parking.second, &parked).await?.1
        }
        "resume_redis" => {
            let (_, one, two) = &parking.redis;
            let (parked, us) = park(one, TEN_1KB).await?;
            extra.insert("park_us", us);
            resume(two, &parked).await?.1
        }
        // What a design that replays from the start pays instead: the whole script again,
        // its ten calls made again.
        "replay_baseline" => {
            let started = Instant::now();
            let result = parking.baseline.call(exec_call(TEN_1KB), CancellationToken::new()).await;
            if !result.ok() {
                bail!("the baseline failed: {}", result.text());
            }
            started.elapsed().as_secs_f64() * 1e6
        }
        "resume_process" => resume_process(binary, workdir)?,
        // A script that reads its conversation's values and keeps ten of 1 KB, on the
        // folder store: one read and one write, whatever the number of calls.
        "values_store_load" => {
            let code = "const seen = load('seen') ?? 0;\n\
                        for (let i = 0; i < 10; i++) store(`k${i}`, 'x'.repeat(1000));\n\
                        store('seen', seen + 1); return load('k9').length;";
            let started = Instant::now();
            let result = parking.first.call(exec_call(code), CancellationToken::new()).await;
            if !result.ok() {
                bail!("the values script failed: {}", result.text());
            }
            started.elapsed().as_secs_f64() * 1e6
        }
        // A running Exec of 100 sequential calls that each wait (one trip through the
        // executor), checkpointed to the folder store at each of its waits (it yields at
        // once), beside the same script run without yielding.
        "checkpoint_calls_100" => {
            let code = "let t = 0;\nfor (let i = 0; i < 100; i++) t += (await tools.hop({})).length;\nreturn t;";
            let plain = Instant::now();
            let result = parking.first.call(exec_call(code), CancellationToken::new()).await;
            if !result.ok() {
                bail!("the plain run failed: {}", result.text());
            }
            extra.insert("plain_us", plain.elapsed().as_secs_f64() * 1e6);
            let started = Instant::now();
            let options = CallOptions::new(CancellationToken::new()).yield_after(std::time::Duration::ZERO);
            let first = parking.first.call_with(exec_call(code), options).await;
            let result = match first.running {
                Some(running) => parking.first.wait(&running.handle, std::time::Duration::from_secs(60)).await?,
                None => first,
            };
            if !result.ok() {
                bail!("the checkpointed run failed: {}", result.text());
            }
            started.elapsed().as_secs_f64() * 1e6
        }
        other => bail!("no parking benchmark {other}"),
    };
    Ok((us, extra))
}

/// `exec-host resume` in a new process, of a script that `exec-host run --on-ask park`
/// parked after ten 1 KB writes (the whole process, start-up included).
fn resume_process(binary: &Path, workdir: &Path) -> Result<f64> {
    let state = workdir.join("parking-state");
    let key = state.join("state.key");
    if !key.exists() {
        std::fs::create_dir_all(&state)?;
        std::fs::write(&key, "cd".repeat(32))?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600))?;
    }
    let workspace = workdir.join("parking-workspace");
    std::fs::create_dir_all(&workspace)?;
    let store = state.join("store").display().to_string();
    let key = key.display().to_string();
    let flags = ["--ask", "edit_file", "--state-store", &store, "--state-key-file", &key, "--quiet", "--workspace"];
    let code = "for (let i = 0; i < 10; i++) await tools.write_file({ path: `f${i}.txt`, content: 'x'.repeat(1024) });\n\
                await tools.write_file({ path: 'g.txt', content: 'a' });\n\
                return await tools.edit_file({ path: 'g.txt', old_string: 'a', new_string: 'b' });";
    let parked = std::process::Command::new(binary)
        .args(["run", "-e", code, "--on-ask", "park", "--json"])
        .args(flags)
        .arg(&workspace)
        .output()?;
    let line: serde_json::Value = serde_json::from_slice(&parked.stdout).context("the parked run's JSON")?;
    let handle = line["paused"]["handle"].as_str().context("the run parked")?.to_string();
    let started = Instant::now();
    let resumed =
        std::process::Command::new(binary).args(["resume", &handle, "--approve", "all"]).args(flags).arg(&workspace).output()?;
    let us = started.elapsed().as_secs_f64() * 1e6;
    if !resumed.status.success() {
        bail!("exec-host resume failed: {}", String::from_utf8_lossy(&resumed.stderr));
    }
    Ok(us)
}
