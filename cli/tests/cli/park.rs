//! `run --on-ask park` and `resume`: a script that must ask parks (exit 3), its process may
//! die, and a new process continues it exactly; on a folder store and on a real Redis.

use std::process::Stdio;

use exec_host_tests::redis::RedisServer;
use serde_json::Value;

use super::{Setup, json_of, send, stderr, stdout};

/// A script that writes a file only after an approval, with what it did before it asked.
const ASKS: &str = "const r = Math.random(); console.log('before', r);\n\
                    await tools.write_file({ path: 'note.txt', content: 'approved' });\n\
                    return { r, note: (await tools.read_file({ path: 'note.txt' })).content };";

/// The store flags: a folder and a key file outside the workspace.
fn store_flags(state: &std::path::Path) -> Vec<String> {
    let key = state.join("state.key");
    if !key.exists() {
        std::fs::create_dir_all(state).unwrap();
        std::fs::write(&key, "ab".repeat(32)).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    vec!["--state-store".into(), state.join("store").display().to_string(), "--state-key-file".into(), key.display().to_string()]
}

/// Parks a script that tries one write (`--ask write_file`, `--on-ask park`; resumed, it
/// returns what became of the write): the handle of the parked Exec.
fn park_a_write(setup: &Setup, flags: &[String]) -> String {
    let code = "try { await tools.write_file({ path: 'x.txt', content: 'x' }); return 'wrote' } catch (e) { return e.message }";
    let parked = setup.run(&args(&["run", "-e", code, "--ask", "write_file", "--on-ask", "park", "--json"], flags));
    assert_eq!(parked.status.code(), Some(3), "{}", stderr(&parked));
    json_of(&parked)["paused"]["handle"].as_str().unwrap().to_string()
}

fn args<'a>(fixed: &[&'a str], more: &'a [String]) -> Vec<&'a str> {
    fixed.iter().copied().chain(more.iter().map(String::as_str)).collect()
}

#[test]
fn a_parked_run_is_resumed_by_a_new_process_after_the_first_was_killed() {
    let setup = Setup::new();
    let state = tempfile::tempdir().unwrap();
    let flags = store_flags(state.path());
    let script = setup.script("asks.js", ASKS);
    // The write asks (an ask rule), and the run parks instead of asking.
    let mut child = super::common::exec_host(setup.workspace.path(), &setup.cache)
        .args(args(&["run", &script, "--ask", "write_file", "--on-ask", "park", "--json", "--quiet"], &flags))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
    // Whatever it is doing now, the parked Exec is stored already: kill it hard.
    if child.try_wait().unwrap().is_none() {
        send(&child, libc::SIGKILL);
    }
    let status = child.wait().unwrap();
    let parked: Value = serde_json::from_str(&line).unwrap();
    assert!(status.code() == Some(3) || status.code().is_none(), "{status:?}");
    assert_eq!(parked["ok"], false);
    let handle = parked["paused"]["handle"].as_str().unwrap().to_string();
    let approvals = parked["paused"]["approvals"].as_array().unwrap();
    assert_eq!(approvals.len(), 1);
    assert_eq!(approvals[0]["tool"], "write_file");
    assert_eq!(approvals[0]["input"]["path"], "note.txt");
    assert!(approvals[0]["why"].as_str().unwrap().contains("permissions.ask rule `write_file`"), "{parked}");
    assert!(!setup.workspace.path().join("note.txt").exists(), "nothing waited for ran");
    let logged = parked["logs"][0].as_str().unwrap().to_string();

    let id = approvals[0]["id"].to_string();
    let resumed = setup.run(&args(&["resume", &handle, "--approve", &id, "--ask", "write_file", "--json"], &flags));
    assert_eq!(resumed.status.code(), Some(0), "{}{}", stdout(&resumed), stderr(&resumed));
    let result = json_of(&resumed);
    assert_eq!(result["value"]["note"], "approved");
    assert_eq!(logged, format!("before {}", result["value"]["r"]), "the random number read before the park is the same");
    assert_eq!(result["logs"][0], logged.as_str(), "the whole console output, as if it had never stopped");
    assert_eq!(result["calls"], serde_json::json!(["write_file", "read_file"]));
    assert_eq!(std::fs::read_to_string(setup.workspace.path().join("note.txt")).unwrap(), "approved");

    let again = setup.run(&args(&["resume", &handle, "--approve", "all"], &flags));
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    assert!(stderr(&again).contains("resumed already"), "{}", stderr(&again));
}

#[test]
fn a_denied_call_rejects_in_the_script_and_bad_handles_and_stores_are_one_sentence() {
    let setup = Setup::new();
    let state = tempfile::tempdir().unwrap();
    let flags = store_flags(state.path());
    let handle = park_a_write(&setup, &flags);
    let denied = setup.run(&args(&["resume", &handle, "--deny", "0=not today", "--ask", "write_file", "--json"], &flags));
    assert_eq!(denied.status.code(), Some(0), "{}", stderr(&denied));
    assert_eq!(json_of(&denied)["value"], "`write_file` was denied: not today");

    for (handle, needle) in [
        ("no-slash", "CONVERSATION/HANDLE"),
        ("conv/not-a-handle", "is not a handle of a parked Exec"),
        ("conv/0123456789abcdef0123456789abcdef", "no parked Exec"),
    ] {
        let output = setup.run(&args(&["resume", handle, "--approve", "all"], &flags));
        super::assert_usage_error(&output, needle);
    }
    let fifo = state.path().join("fifo");
    let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path and a mode; mkfifo(3) has no other preconditions.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    let key = state.path().join("state.key").display().to_string();
    let run_on =
        |store: &str| setup.run(&["run", "-e", "return 1", "--on-ask", "park", "--state-store", store, "--state-key-file", &key]);
    super::assert_usage_error(&run_on(fifo.to_str().unwrap()), "is not a plain folder");
    super::assert_usage_error(&run_on("store"), "inside the workspace");
    super::assert_usage_error(&run_on("redis://127.0.0.1:1/0"), "could not be reached");
}

#[test]
fn a_resume_is_bound_by_the_answers_whatever_its_own_flags_allow() {
    let setup = Setup::new();
    let state = tempfile::tempdir().unwrap();
    let flags = store_flags(state.path());
    // `run` starts in bypassPermissions: without `--ask`, a resume's own rules would let
    // every write run (`park_a_write` asks).
    let handle = park_a_write(&setup, &flags);
    let denied = setup.run(&args(&["resume", &handle, "--deny", "0=not today", "--json"], &flags));
    assert_eq!(denied.status.code(), Some(0), "{}", stderr(&denied));
    assert_eq!(json_of(&denied)["value"], "`write_file` was denied: not today");
    assert!(!setup.workspace.path().join("x.txt").exists(), "the denied write never ran");

    // Two writes wait; one is approved: the other asks again and parks again.
    let code = "await Promise.all([tools.write_file({ path: 'a.txt', content: 'a' }), tools.write_file({ path: 'b.txt', content: 'b' })]); return 'both'";
    let parked = setup.run(&args(&["run", "-e", code, "--ask", "write_file", "--on-ask", "park", "--json"], &flags));
    assert_eq!(parked.status.code(), Some(3), "{}", stderr(&parked));
    let parked = json_of(&parked);
    let handle = parked["paused"]["handle"].as_str().unwrap().to_string();
    let first = parked["paused"]["approvals"].as_array().unwrap().iter().find(|a| a["input"]["path"] == "a.txt").unwrap()["id"]
        .to_string();
    let again = setup.run(&args(&["resume", &handle, "--approve", &first, "--on-ask", "park", "--json"], &flags));
    assert_eq!(again.status.code(), Some(3), "the unanswered write parks again: {}{}", stdout(&again), stderr(&again));
    let again = json_of(&again);
    let waiting = again["paused"]["approvals"].as_array().unwrap();
    assert_eq!((waiting.len(), &waiting[0]["input"]["path"]), (1, &serde_json::json!("b.txt")), "{again}");
    assert!(setup.workspace.path().join("a.txt").exists());
    assert!(!setup.workspace.path().join("b.txt").exists(), "nobody approved it");
    // And refused, not run, where nobody can be asked.
    let handle = again["paused"]["handle"].as_str().unwrap().to_string();
    let refused = setup.run(&args(&["resume", &handle, "--on-ask", "refuse", "--json"], &flags));
    assert_eq!(refused.status.code(), Some(1), "{}{}", stdout(&refused), stderr(&refused));
    assert!(stdout(&refused).contains("needs approval"), "{}", stdout(&refused));
    assert!(!setup.workspace.path().join("b.txt").exists(), "nobody approved it");
}

#[test]
fn on_resume_deny_answers_a_call_and_deny_rule_is_the_permission_rule() {
    let setup = Setup::new();
    let help = stdout(&setup.run(&["resume", "--help"]));
    assert!(help.contains("--deny <ID[=REASON]>") && help.contains("--deny-rule <RULE>"), "{help}");
    assert_eq!(help.matches("--deny <").count(), 1, "one meaning per flag: {help}");
    let help = stdout(&setup.run(&["run", "--help"]));
    assert!(help.contains("--deny <RULE>") && !help.contains("--deny-rule <"), "{help}");

    let state = tempfile::tempdir().unwrap();
    let flags = store_flags(state.path());
    let park = || park_a_write(&setup, &flags);
    // A rule where an answer is wanted is refused, saying which flag takes it.
    let handle = park();
    let rule = setup.run(&args(&["resume", &handle, "--deny", "write_file"], &flags));
    super::assert_usage_error(&rule, "a permission rule is --deny-rule RULE");
    // The answer refuses the call it names.
    let denied = setup.run(&args(&["resume", &handle, "--deny", "0=not today", "--ask", "write_file", "--json"], &flags));
    assert_eq!(json_of(&denied)["value"], "`write_file` was denied: not today", "{}", stderr(&denied));
    // The rule holds over an approval: the policy of the moment decides. (A rule on the
    // whole tool would take it out of reach, and the Exec would stay parked.)
    let handle = park();
    let ruled = setup.run(&args(&["resume", &handle, "--approve", "0", "--deny-rule", "write_file(x.txt)", "--json"], &flags));
    assert_eq!(ruled.status.code(), Some(0), "{}", stderr(&ruled));
    let said = json_of(&ruled)["value"].as_str().unwrap().to_string();
    assert!(said.contains("permissions.deny rule `write_file(x.txt)`"), "{said}");
    assert!(!setup.workspace.path().join("x.txt").exists());
}

#[test]
fn a_run_parked_on_one_redis_host_is_resumed_by_another_process() {
    let server = RedisServer::start();
    let setup = Setup::new();
    let state = tempfile::tempdir().unwrap();
    let mut flags = store_flags(state.path());
    flags[1] = server.url(3);
    let parked = setup.run(&args(&["run", "-e", ASKS, "--ask", "write_file", "--on-ask", "park", "--json"], &flags));
    assert_eq!(parked.status.code(), Some(3), "{}", stderr(&parked));
    let handle = json_of(&parked)["paused"]["handle"].as_str().unwrap().to_string();
    let resumed = setup.run(&args(&["resume", &handle, "--approve", "all", "--ask", "write_file", "--json"], &flags));
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert_eq!(json_of(&resumed)["value"]["note"], "approved");
}

#[test]
fn runs_of_one_conversation_keep_values_for_each_other_and_others_see_none() {
    let setup = Setup::new();
    let state = tempfile::tempdir().unwrap();
    let flags = store_flags(state.path());
    let first =
        setup.run(&args(&["run", "--conversation", "triage", "--json", "-e", "store('seen', ['a.md']); return 1"], &flags));
    assert_eq!(json_of(&first)["ok"], true, "{}", stderr(&first));
    let second = setup.run(&args(&["run", "--conversation", "triage", "--json", "-e", "return load('seen')"], &flags));
    assert_eq!(json_of(&second)["value"], serde_json::json!(["a.md"]), "{}", stderr(&second));
    let other = setup.run(&args(&["run", "--conversation", "other", "--json", "-e", "return typeof load('seen')"], &flags));
    assert_eq!(json_of(&other)["value"], "undefined");
    let bounded = setup.run(&args(
        &["run", "--conversation", "triage", "--max-stored-value-bytes", "4", "--json", "-e", "store('x', 'long')"],
        &flags,
    ));
    assert!(
        json_of(&bounded)["error"].as_str().unwrap().contains("more than the 4 a kept value may take"),
        "{}",
        stdout(&bounded)
    );
    let refused = setup.run(&args(&["run", "--max-stored-bytes", "9000000000", "-e", "1"], &flags));
    super::assert_usage_error(&refused, "--max-stored-bytes 9000000000 is more than");
}

#[test]
fn a_command_reads_nothing_of_the_state_kept_under_the_system_folders_it_reads() {
    // As a deployment may keep them: the store and its key in a folder of /etc, which
    // commands read for their configuration.
    let setup = Setup::new();
    let state = tempfile::Builder::new().prefix("exec-host-").tempdir_in("/etc").expect("the test runs as root, as CI does");
    let flags = store_flags(state.path());
    std::fs::write(state.path().join("readme"), "public").unwrap();
    let folder = state.path().display();
    let script = format!(
        "return (await tools.Bash({{ command: 'cat {folder}/state.key; cat {folder}/readme; ls {folder}/store; head -c 9 /etc/passwd' }})).output"
    );
    let ran = setup.run(&args(&["run", "--enable-bash", "--conversation", "c", "--json", "-e", &script], &flags));
    let output = json_of(&ran)["value"].as_str().unwrap_or_default().to_string();
    assert!(!output.contains(&"ab".repeat(32)), "{output}");
    assert!(output.contains("state.key: Permission denied") && output.contains("/store': Permission denied"), "{output}");
    assert!(output.contains("public") && output.contains("root:x:0:"), "the rest of /etc reads as before: {output}");
}
