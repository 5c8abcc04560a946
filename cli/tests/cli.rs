//! The `exec-host` binary as a user runs it: exit statuses, the JSON contract, bad input,
//! the compiled-guest cache and Ctrl-C.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

mod common;
use common::{exec_host, fixture_mcp_server, shared_cache, test_packages};

struct Setup {
    workspace: tempfile::TempDir,
    cache: std::path::PathBuf,
    _own_cache: Option<tempfile::TempDir>,
}

impl Setup {
    /// A fresh workspace; the compiled guest is cached in one folder shared by the tests.
    fn new() -> Self {
        Setup { workspace: tempfile::tempdir().unwrap(), cache: shared_cache(), _own_cache: None }
    }

    /// A fresh workspace and an empty cache of its own.
    fn with_empty_cache() -> Self {
        let own = tempfile::tempdir().unwrap();
        Setup { workspace: tempfile::tempdir().unwrap(), cache: own.path().to_path_buf(), _own_cache: Some(own) }
    }

    fn script(&self, name: &str, code: &str) -> String {
        std::fs::write(self.workspace.path().join(name), code).unwrap();
        name.to_string()
    }

    fn run(&self, args: &[&str]) -> Output {
        exec_host(self.workspace.path(), &self.cache).args(args).output().unwrap()
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

fn json_of(output: &Output) -> Value {
    let text = stdout(output);
    assert_eq!(text.lines().count(), 1, "--json prints exactly one line: {text}");
    serde_json::from_str(&text).unwrap()
}

/// A usage error: exit 2, one sentence, no panic and no backtrace.
fn assert_usage_error(output: &Output, needle: &str) {
    let err = stderr(output);
    assert_eq!(output.status.code(), Some(2), "stderr: {err}");
    assert!(err.contains(needle), "{err}");
    assert!(!err.contains("panicked") && !err.contains("backtrace") && !err.contains("RUST_BACKTRACE"), "{err}");
    assert!(stdout(output).is_empty());
}

#[test]
fn runs_a_script_against_the_workspace() {
    let setup = Setup::new();
    std::fs::write(setup.workspace.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let script = setup.script("s.js", "const r = await tools.read_file({ path: 'notes.txt' });\nconsole.log('lines:', r.total_lines);\nreturn r.content.toUpperCase();");
    let output = setup.run(&["run", &script]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Console output:\nlines: 2\n\nReturn value:\nALPHA\nBETA\n");
    assert_eq!(stderr(&output), "1 tool call\nread_file\n");
}

#[test]
fn json_output_has_exactly_the_contract_keys() {
    let setup = Setup::new();
    let script = setup.script("s.js", "console.log('hi'); await tools.ls({}); return { n: 1 };");
    let output = setup.run(&["run", "--json", &script]);
    assert_eq!(output.status.code(), Some(0));
    let object = json_of(&output);
    let keys: Vec<&str> = object.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["ok", "text", "value", "logs", "images", "calls", "call_details", "messages", "summary", "error"]);
    assert_eq!(object["ok"], json!(true));
    assert_eq!(object["value"], json!({"n": 1}));
    assert_eq!(object["logs"], json!(["hi"]));
    assert_eq!(object["images"], json!([]));
    assert_eq!(object["calls"], json!(["ls"]));
    assert_eq!(object["call_details"].as_array().unwrap().len(), 1);
    assert_eq!(object["call_details"][0]["name"], "ls");
    assert_eq!(object["call_details"][0]["ok"], true);
    assert_eq!(object["call_details"][0]["stage"], Value::Null);
    assert!(object["call_details"][0]["ms"].as_f64().unwrap() >= 0.0);
    assert_eq!(object["summary"], json!("1 tool call\nls"));
    assert_eq!(object["error"], Value::Null);
    assert_eq!(object["text"], json!("Console output:\nhi\n\nReturn value:\n{\"n\":1}"));
}

#[test]
fn a_failed_script_exits_1() {
    let setup = Setup::new();
    let script = setup.script("s.js", "await tools.ls({});\nthrow new Error('it broke');");
    let output = setup.run(&["run", "--json", &script]);
    assert_eq!(output.status.code(), Some(1));
    let object = json_of(&output);
    assert_eq!(object["ok"], json!(false));
    assert_eq!(object["value"], Value::Null);
    assert_eq!(object["summary"], json!("failed"));
    assert_eq!(object["calls"], json!(["ls"]));
    assert_eq!(
        object["error"],
        json!("The script failed with an uncaught error:\nError: it broke\n    at <anonymous> (script.js:2:11)")
    );
    assert_eq!(object["text"], object["error"]);

    let plain = setup.run(&["run", &script]);
    assert_eq!(plain.status.code(), Some(1));
    assert_eq!(stderr(&plain), "failed\n");
}

#[test]
fn tool_logs_never_reach_the_json() {
    let setup = Setup::new();
    let script = setup.script("s.js", "try { await tools.read_file({ path: 'missing' }); } catch (e) {} return 1;");
    let output = exec_host(setup.workspace.path(), &setup.cache).args(["-vv", "run", "--json", &script]).output().unwrap();
    assert_eq!(json_of(&output)["value"], json!(1));
    assert!(stderr(&output).contains("read_file"), "debug logs go to stderr: {}", stderr(&output));
}

#[test]
fn reads_the_script_from_stdin() {
    let setup = Setup::new();
    let mut child = exec_host(setup.workspace.path(), &setup.cache)
        .args(["run", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"return 6 * 7").unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stdout(&output), "42\n");
}

#[test]
fn limits_come_from_flags() {
    let setup = Setup::new();
    let spin = setup.script("spin.js", "while (true) {}");
    let output = setup.run(&["run", "--budget-ms", "100", &spin]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).starts_with("The script exceeded its execution budget of 100 ms"), "{}", stdout(&output));

    let calls = setup.script("calls.js", "const out = []; for (let i = 0; i < 3; i++) { try { await tools.ls({}); out.push('ok'); } catch (e) { out.push('refused'); } } return out;");
    let output = setup.run(&["run", "--json", "--max-calls", "2", &calls]);
    assert_eq!(json_of(&output)["value"], json!(["ok", "ok", "refused"]));

    let big = setup.script("big.js", "console.log('x'.repeat(100)); return 'y'.repeat(100);");
    let output = setup.run(&["run", "--json", "--max-log-chars", "10", "--max-result-chars", "20", &big]);
    let object = json_of(&output);
    assert_eq!(object["logs"], json!(["xxxxxxxxxx"]));
    assert!(object["text"].as_str().unwrap().contains("[result cut: 100 characters in all, the first 20 shown]"));
}

#[test]
fn the_wait_spin_is_a_flag_and_never_the_scripts_time() {
    let setup = Setup::new();
    let wait = setup.script("wait.js", "await new Promise((done) => setTimeout(done, 300)); return 'waited';");
    for spin in ["0", "1000000"] {
        let output = setup.run(&["run", "--budget-ms", "100", "--wait-spin-us", spin, &wait]);
        assert_eq!((output.status.code(), stdout(&output).as_str()), (Some(0), "waited\n"), "{}", stderr(&output));
    }
    assert_usage_error(&setup.run(&["run", "--wait-spin-us", "1000001", &wait]), "1000001 is not in 0..=1000000");
}

#[test]
fn syntax_errors_name_line_and_column() {
    let setup = Setup::new();
    let script = setup.script("s.js", "const a = 1;\nconst b = ;\n");
    let output = setup.run(&["run", &script]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("(line 2, column 11)"), "{}", stdout(&output));
}

#[test]
fn bad_input_is_one_clear_sentence_and_exit_2() {
    let setup = Setup::new();
    assert_usage_error(&setup.run(&["run", "missing.js"]), "the script missing.js does not exist");
    std::fs::write(setup.workspace.path().join("latin1.js"), b"return '\xe9';").unwrap();
    assert_usage_error(&setup.run(&["run", "latin1.js"]), "is not valid UTF-8 (invalid byte at offset 8)");
    let empty = setup.script("empty.js", "  \n\t\n");
    assert_usage_error(&setup.run(&["run", &empty]), "is empty; there is nothing to run");
    assert_usage_error(&setup.run(&["run", "."]), "is a directory, not a file");
    let ok = setup.script("ok.js", "return 1");
    assert_usage_error(&setup.run(&["run", "--workspace", "no/such/dir", &ok]), "the workspace no/such/dir does not exist");
    assert_usage_error(&setup.run(&["run", "--workspace", &ok, &ok]), "is not a directory");
    assert_usage_error(&setup.run(&["run", "--max-memory-mib", "1", &ok]), "invalid limits: the memory limit must be between");
    assert_usage_error(&setup.run(&["run", "--budget-ms", "0", &ok]), "invalid limits: the budget must be more than 0 ms");
    assert_usage_error(&setup.run(&["run", "--frobnicate", &ok]), "unexpected argument '--frobnicate'");
    assert_usage_error(&setup.run(&["run"]), "required");
}

#[test]
fn a_second_run_reuses_the_compiled_guest() {
    let setup = Setup::with_empty_cache();
    let script = setup.script("s.js", "return 1");
    assert_eq!(setup.run(&["run", &script]).status.code(), Some(0));
    let cached: Vec<_> = std::fs::read_dir(&setup.cache).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(cached.len(), 1, "one compiled guest is cached: {cached:?}");
    let written = std::fs::metadata(&cached[0]).unwrap().modified().unwrap();
    assert_eq!(setup.run(&["run", &script]).status.code(), Some(0));
    assert_eq!(std::fs::metadata(&cached[0]).unwrap().modified().unwrap(), written, "the second run must not recompile");

    // A damaged cache file is ignored and replaced, never trusted.
    std::fs::write(&cached[0], b"not a compiled guest").unwrap();
    let output = setup.run(&["run", &script]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "1\n");

    // Native code others could have written is not mapped.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&cached[0], std::fs::Permissions::from_mode(0o666)).unwrap();
    let output = setup.run(&["run", &script]);
    assert_eq!((output.status.code(), stdout(&output).as_str()), (Some(0), "1\n"));
    assert!(stderr(&output).contains("is writable by other users (mode 666)"), "{}", stderr(&output));
}

/// A first run needs no compiling on the machine exec-host was built on: the guest's native
/// code from the build goes to the cache, and the next run maps it.
#[test]
fn a_first_run_takes_the_guest_compiled_when_exec_host_was_built() {
    if cfg!(debug_assertions) {
        return; // an unoptimised build compiles no guest (host/build.rs)
    }
    let setup = Setup::with_empty_cache();
    let script = setup.script("s.js", "return 1");
    let origin = |output: &Output| {
        let err = stderr(output);
        ["compiled when exec-host was built", "mapped from the cache", "compiled now"]
            .into_iter()
            .find(|origin| err.contains(&format!("the guest's native code: {origin}")))
            .unwrap_or_else(|| panic!("no origin in: {err}"))
    };
    let first = setup.run(&["run", "-vv", &script]);
    assert_eq!((first.status.code(), stdout(&first).as_str()), (Some(0), "1\n"), "{}", stderr(&first));
    assert_eq!(origin(&first), "compiled when exec-host was built");
    assert_eq!(std::fs::read_dir(&setup.cache).unwrap().count(), 1, "the code was cached");
    assert_eq!(origin(&setup.run(&["run", "-vv", &script])), "mapped from the cache");
}

#[test]
fn a_perf_map_names_the_guest_functions_when_asked() {
    let setup = Setup::new();
    let script = setup.script("s.js", "return 1");
    let run = |perf_map: &str| {
        let child = exec_host(setup.workspace.path(), &setup.cache)
            .args(["run", &script])
            .env("EXEC_HOST_PERF_MAP", perf_map)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        // wasmtime writes it under /tmp whatever TMPDIR says.
        let map = Path::new("/tmp").join(format!("perf-{}.map", child.id()));
        assert!(child.wait_with_output().unwrap().status.success());
        let text = std::fs::read_to_string(&map).ok();
        let _ = std::fs::remove_file(&map);
        text
    };
    let text = run("1").expect("EXEC_HOST_PERF_MAP=1 writes /tmp/perf-PID.map");
    assert!(text.lines().any(|line| line.contains("wasm[0]::function[")), "the guest's functions are named: {text:.300}");
    assert_eq!(run("0"), None, "no map unless asked");
}

#[test]
fn a_cache_inside_the_workspace_is_never_used() {
    let setup = Setup::new();
    let script = setup.script("s.js", "return 1");
    let cache = setup.workspace.path().join(".cache/exec-host");
    let run = || exec_host(setup.workspace.path(), &cache).args(["run", "--workspace", ".", &script]).output().unwrap();
    let output = run();
    assert_eq!((output.status.code(), stdout(&output).as_str()), (Some(0), "1\n"));
    assert!(stderr(&output).contains("is inside the workspace"), "{}", stderr(&output));
    assert!(!cache.exists() || std::fs::read_dir(&cache).unwrap().next().is_none(), "nothing was cached there");
}

#[test]
fn ctrl_c_aborts_the_script() {
    let setup = Setup::new();
    let script = setup
        .script("spin.js", "await tools.write_file({ path: 'started', content: '' }); console.log('started'); while (true) {}");
    let child = exec_host(setup.workspace.path(), &setup.cache)
        .args(["run", "--json", "--budget-ms", "600000", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = setup.workspace.path().join("started");
    wait_until(60, || started.exists());
    std::thread::sleep(std::time::Duration::from_millis(100));
    interrupt(&child);
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let object = json_of(&output);
    assert_eq!(object["logs"], json!(["started"]));
    assert!(object["error"].as_str().unwrap().starts_with("The script was aborted"), "{object}");
}

#[test]
fn the_readme_example_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let setup = Setup::new();
    let copy = setup.workspace.path();
    for entry in std::fs::read_dir(root.join("examples/workspace/notes")).unwrap() {
        let entry = entry.unwrap();
        std::fs::create_dir_all(copy.join("notes")).unwrap();
        std::fs::copy(entry.path(), copy.join("notes").join(entry.file_name())).unwrap();
    }
    let script = root.join("examples/summarize.js");
    let output = setup.run(&["run", "--json", script.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let object = json_of(&output);
    assert_eq!(object["value"]["todos"].as_array().unwrap().len(), 4, "{object}");
    let report = std::fs::read_to_string(copy.join("out/open-items.md")).unwrap();
    assert!(report.starts_with("# Open items\n\n- [ ] document the new `--strict` flag."), "{report}");
}

#[test]
fn an_unwritable_workspace_fails_writes_with_a_clear_sentence() {
    // /sys/kernel is a directory no one, root included, may create files in.
    let setup = Setup::new();
    let script = setup.workspace.path().join("w.js");
    std::fs::write(&script, "const listed = await tools.ls({});\nawait tools.write_file({ path: 'notes.txt', content: 'x' });")
        .unwrap();
    let output = setup.run(&["run", "--json", "--workspace", "/sys/kernel", script.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let object = json_of(&output);
    assert_eq!(object["calls"], json!(["ls", "write_file"]));
    let error = object["error"].as_str().unwrap();
    assert!(error.contains("`notes.txt`: permission denied (the workspace may not be writable)"), "{error}");
}

/// Polls `condition` until it holds or `seconds` have passed; the caller asserts the outcome.
fn wait_until(seconds: u64, condition: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    while !condition() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Sends SIGINT, as Ctrl-C in a terminal does.
fn interrupt(child: &std::process::Child) {
    send(child, libc::SIGINT);
}

fn send(child: &std::process::Child, signal: libc::c_int) {
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill(2) with a pid this test spawned and has not reaped yet.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "{}", std::io::Error::last_os_error());
}

/// Whether a live process has `marker` among its arguments (read from /proc).
fn running_with(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        let alive = std::fs::read_to_string(entry.path().join("stat"))
            .is_ok_and(|stat| stat.rsplit(')').next().is_some_and(|rest| !rest.trim_start().starts_with('Z')));
        alive
            && std::fs::read(entry.path().join("cmdline"))
                .is_ok_and(|cmdline| cmdline.split(|&b| b == 0).any(|arg| arg == marker.as_bytes()))
    })
}

fn mcp_config(setup: &Setup, servers: Value) -> String {
    std::fs::write(setup.workspace.path().join("servers.json"), json!({"mcpServers": servers}).to_string()).unwrap();
    "servers.json".into()
}

#[test]
fn a_script_chains_calls_across_two_mcp_servers() {
    let setup = Setup::new();
    let fixture = fixture_mcp_server();
    let first = mcp_config(&setup, json!({"calc": {"command": fixture}}));
    std::fs::write(setup.workspace.path().join("more.json"), json!({"mcpServers": {"talk": {"command": fixture}}}).to_string())
        .unwrap();
    let script = setup.script(
        "chain.js",
        "const { sum } = await tools.mcp__calc__add({a: 1, b: 2});
         const noisy = await tools.mcp__talk__noisy({});
         return await tools.mcp__talk__greet({name: `${noisy} ${sum}`})",
    );
    let output = setup.run(&["run", "--json", "--mcp-config", &first, "--mcp-config", "more.json", &script]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let result = json_of(&output);
    assert_eq!(result["value"], "hello, done 3");
    assert_eq!(result["calls"], json!(["mcp__calc__add", "mcp__talk__noisy", "mcp__talk__greet"]));
    assert!(!stdout(&output).contains("a line only the log may see"), "server stderr reached the result");
    assert!(!stderr(&output).contains("a line only the log may see"), "server stderr is logged at info, not shown by default");
    // With -v the log shows it, named by server.
    let output = setup.run(&["-v", "run", "--mcp-config", &first, "--mcp-config", "more.json", &script]);
    assert!(stderr(&output).contains("a line only the log may see"), "{}", stderr(&output));
    assert!(!stdout(&output).contains("a line only the log may see"));
}

#[test]
fn a_server_that_cannot_start_is_reported_once_and_the_script_runs_with_the_others() {
    let setup = Setup::new();
    let fixture = fixture_mcp_server();
    let config = mcp_config(
        &setup,
        json!({"good": {"command": fixture}, "broken": {"command": fixture, "args": ["--fail-start"]},
               "silent": {"command": fixture, "args": ["--mute"]}}),
    );
    let script = setup.script("s.js", "return await tools.mcp__good__greet({name: 'x'})");
    let started = std::time::Instant::now();
    let output = setup.run(&["run", "--mcp-connect-timeout-ms", "1000", "--mcp-config", &config, &script]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), "hello, x");
    let errors = stderr(&output);
    assert_eq!(errors.matches("MCP server `broken` is not available").count(), 1, "{errors}");
    assert!(errors.contains("cannot open its database"), "{errors}");
    assert_eq!(errors.matches("MCP server `silent` is not available: no answer to `initialize`").count(), 1, "{errors}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "the host took {:?} to exit", started.elapsed());
}

#[test]
fn mcp_configuration_errors_name_the_file_the_key_and_the_line() {
    let setup = Setup::new();
    let script = setup.script("s.js", "return 1");
    std::fs::write(setup.workspace.path().join("bad.json"), "{\"mcpServers\": {\n  \"a\": {\"command\": 42}\n}}").unwrap();
    let output = setup.run(&["run", "--mcp-config", "bad.json", &script]);
    assert_usage_error(&output, "bad.json: mcpServers.a.command: invalid type: integer `42`");
    assert!(stderr(&output).contains("line 2"), "{}", stderr(&output));
    let config = mcp_config(&setup, json!({"my__server": {"command": "x"}}));
    assert_usage_error(&setup.run(&["run", "--mcp-config", &config, &script]), "ambiguous");
    assert_usage_error(&setup.run(&["run", "--mcp-config", "missing.json", &script]), "missing.json: the file does not exist");
}

#[test]
fn a_stopped_script_leaves_no_mcp_server_behind() {
    // Ctrl-C, a plain kill, the terminal going away; the server ignores the end of its input.
    for (signal, name) in [(libc::SIGINT, "int"), (libc::SIGTERM, "term"), (libc::SIGHUP, "hup")] {
        let setup = Setup::new();
        // A marker in the server's command line finds its process.
        let marker = format!("exec-host-test-marker-{name}-{}", std::process::id());
        let config = mcp_config(&setup, json!({"fx": {"command": fixture_mcp_server(), "args": ["--linger", marker]}}));
        let script = setup.script("s.js", "await tools.mcp__fx__never({})");
        let mut child = exec_host(setup.workspace.path(), &setup.cache)
            .args(["run", "--mcp-config", &config, &script])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let server_running = || running_with(&marker);
        wait_until(30, server_running);
        assert!(server_running(), "the server never started");
        std::thread::sleep(std::time::Duration::from_millis(500));
        send(&child, signal);
        let started = std::time::Instant::now();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(1), "{name}");
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "{name}: exit took {:?}", started.elapsed());
        wait_until(5, || !server_running());
        assert!(!server_running(), "{name}: the MCP server outlived the host");
    }
}

#[test]
fn a_server_that_outlives_its_stdin_is_killed_when_the_host_exits() {
    let setup = Setup::new();
    let marker = format!("exec-host-linger-marker-{}", std::process::id());
    let config = mcp_config(&setup, json!({"fx": {"command": fixture_mcp_server(), "args": ["--linger", marker]}}));
    let script = setup.script("s.js", "return await tools.mcp__fx__greet({name: 'x'})");
    let started = std::time::Instant::now();
    let output = setup.run(&["run", "--mcp-config", &config, &script]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), "hello, x");
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "the host took {:?} to exit", started.elapsed());
    let running = || running_with(&marker);
    wait_until(3, || !running());
    assert!(!running(), "the server outlived the host");
}

/// A workspace with the fixture server configured as `fx` and `other`, a project settings
/// file that denies `mcp__fx__fail`, and a user settings file that keeps `mcp__fx__greet` flat.
fn pool_setup() -> (Setup, String) {
    let setup = Setup::new();
    let fixture = fixture_mcp_server();
    let config = mcp_config(&setup, json!({"fx": {"command": fixture}}));
    let project = setup.workspace.path().join(".exec-host");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("settings.json"), r#"{"permissions": {"deny": ["mcp__fx__fail"]}}"#).unwrap();
    let user = setup.workspace.path().join(".config/exec-host");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join("settings.json"), r#"{"nonDeferredTools": ["mcp__fx__greet"]}"#).unwrap();
    (setup, config)
}

#[test]
fn tools_shows_what_a_model_is_given_under_the_settings_in_force() {
    let (setup, config) = pool_setup();
    let output = setup.run(&["tools", "--mcp-config", &config]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let section = |title: &str| -> Vec<String> {
        let start = text.find(title).unwrap_or_else(|| panic!("no {title:?} in\n{text}"));
        text[start..].lines().skip(1).take_while(|line| line.starts_with("  ")).map(|line| line.trim().to_string()).collect()
    };
    assert!(text.starts_with("Exec is declared; "), "{text}");
    let declared = section("Declared to the model");
    assert_eq!(declared, ["Exec", "mcp__fx__greet", "mcp__fx__pinned", "view_tool_call"]);
    let pool = section("Pool (");
    for pooled in ["mcp__fx__add", "read_file", "write_file"] {
        assert!(pool.contains(&pooled.to_string()), "{pooled} is pooled: {pool:?}");
    }
    assert!(!pool.contains(&"mcp__fx__greet".to_string()), "{pool:?}");
    let announced = section("Announcement appended");
    assert_eq!(announced[1..].iter().map(|line| line.trim_start_matches("| ")).collect::<Vec<_>>(), pool, "names, in pool order");
    assert!(!text.contains("mcp__fx__fail"), "a denied tool appears nowhere");
    assert!(text.contains("  | tools.ToolSearch(args: {"), "Exec's description is shown: {text}");
    assert!(text.contains(".exec-host/settings.json") && text.contains(".config/exec-host/settings.json"), "{text}");
}

#[test]
fn tools_json_keeps_exec_s_declaration_byte_identical_and_enable_exec_false_flattens_everything() {
    let (setup, config) = pool_setup();
    let output = setup.run(&["tools", "--json", "--mcp-config", &config]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let one_server = json_of(&output);
    assert_eq!(one_server["exec"], "declared");
    let pool: Vec<String> = serde_json::from_value(one_server["pool"].clone()).unwrap();
    assert!(pool.contains(&"mcp__fx__add".to_string()));

    let fixture = fixture_mcp_server();
    std::fs::write(
        setup.workspace.path().join("two.json"),
        json!({"mcpServers": {"fx": {"command": &fixture}, "more": {"command": &fixture}}}).to_string(),
    )
    .unwrap();
    let two_servers = json_of(&setup.run(&["tools", "--json", "--mcp-config", "two.json"]));
    assert!(two_servers["pool"].as_array().unwrap().len() > pool.len());
    assert_eq!(
        one_server["declarations"][0].to_string(),
        two_servers["declarations"][0].to_string(),
        "Exec's declaration does not change with the pool"
    );
    assert_eq!(one_server["declarations"][0]["name"], "Exec");
    assert!(one_server["declarations"][0]["input_schema"]["properties"]["code"].is_object());

    std::fs::write(setup.workspace.path().join("off.json"), r#"{"enableExec": false}"#).unwrap();
    let off = json_of(&setup.run(&["tools", "--json", "--mcp-config", &config, "--settings", "off.json"]));
    assert_eq!(off["exec"], "disabled");
    assert_eq!(off["pool"], json!([]));
    let declared: Vec<String> =
        off["declarations"].as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap().to_string()).collect();
    for name in pool.iter().chain(&["read_file".to_string(), "mcp__fx__greet".to_string()]) {
        assert!(declared.contains(name), "{name} is declared flat with Exec off: {declared:?}");
    }
    assert!(!declared.contains(&"Exec".to_string()) && !declared.contains(&"mcp__fx__fail".to_string()));
}

#[test]
fn tools_stats_compares_exec_mode_with_flat_mode() {
    let (setup, _) = pool_setup();
    let everything = test_packages().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let config = mcp_config(&setup, json!({"everything": {"command": "node", "args": [everything, "stdio"]}}));
    let output = setup.run(&["tools", "--stats", "--mcp-config", &config]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let row = |label: &str| -> Vec<usize> {
        let line = text.lines().find(|line| line.starts_with(label)).unwrap_or_else(|| panic!("no {label} row in\n{text}"));
        line[label.len()..].split_whitespace().map(|n| n.parse().unwrap()).collect()
    };
    let (exec, flat, announcement) = (row("Exec mode"), row("flat mode"), row("announcement"));
    assert!(exec[0] < flat[0] && exec[1] < flat[1], "{text}");
    assert_eq!(exec[2], exec[1].div_ceil(4), "{text}");
    assert!(text.contains("fewer bytes"), "{text}");

    // The announcement counts the pool's names, and its bytes are those of its text.
    let listed = json_of(&setup.run(&["tools", "--json", "--mcp-config", &config]));
    let names = listed["pool"].as_array().unwrap().len();
    assert_eq!(announcement[0], names, "{text}");
    assert_eq!(announcement[1], listed["announcement"].as_str().unwrap().len(), "{text}");
    assert!(text.contains("rounded up") && text.contains("once per conversation"), "the method is stated:\n{text}");
}

#[test]
fn completions_are_printed_for_each_shell() {
    let setup = Setup::new();
    for (shell, marker) in [("bash", "complete -F"), ("zsh", "#compdef exec-host"), ("fish", "complete -c exec-host")] {
        let output = setup.run(&["completions", shell]);
        assert_eq!(output.status.code(), Some(0), "{shell}: {}", stderr(&output));
        let script = stdout(&output);
        assert!(script.contains(marker), "{shell}: {script}");
        for word in ["run", "serve", "mcp-config", "workspace"] {
            assert!(script.contains(word), "{shell} completes {word}");
        }
    }
    assert_usage_error(&setup.run(&["completions", "cmd.exe"]), "invalid value");
}

#[test]
fn search_finds_tools_like_a_script_does() {
    let (setup, config) = pool_setup();
    let output = setup.run(&["search", "select:mcp__fx__add", "--json", "--mcp-config", &config]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let result = json_of(&output);
    assert_eq!(result["total"], 1);
    assert_eq!(result["matches"][0]["name"], "mcp__fx__add");
    assert!(result["matches"][0]["signature"].as_str().unwrap().starts_with("tools.mcp__fx__add(args: {"), "{result}");

    // As in `run` and a model's script: the pool, not the flat tools, not the denied ones.
    let output = setup.run(&["search", "select:read_file,mcp__fx__fail,mcp__fx__greet", "--mcp-config", &config]);
    let text = stdout(&output);
    assert!(text.contains("tools.read_file(args: {"), "{text}");
    assert!(!text.contains("mcp__fx__fail") && !text.contains("mcp__fx__greet"), "{text}");
    assert!(stderr(&output).contains("1 matching tool"), "{}", stderr(&output));

    let output = setup.run(&["search", "", "--max-results", "1", "--json", "--mcp-config", &config]);
    let all = json_of(&output);
    assert_eq!(all["matches"].as_array().unwrap().len(), all["total"].as_u64().unwrap() as usize, "an empty query lists all");

    let output = setup.run(&["search", "nothing-like-this", "--mcp-config", &config]);
    assert_eq!(output.status.code(), Some(1), "no match: exit 1, as grep");
    assert!(stderr(&output).contains("no tool matches \"nothing-like-this\""), "{}", stderr(&output));
}

#[test]
fn run_leaves_denied_tools_out_of_the_script() {
    let (setup, config) = pool_setup();
    std::fs::write(setup.workspace.path().join("deny.json"), r#"{"permissions": {"deny": ["write_file"]}}"#).unwrap();
    let script = setup.script(
        "s.js",
        "const found = await tools.ToolSearch({ query: 'select:write_file,read_file,mcp__fx__fail,mcp__fx__greet' });
         let fail; try { await tools.mcp__fx__fail({}); } catch (e) { fail = e.message; }
         return { writeFile: typeof tools.write_file, found: found.matches.map(m => m.name), fail };",
    );
    let output = setup.run(&["run", "--json", "--settings", "deny.json", "--mcp-config", &config, &script]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let value = &json_of(&output)["value"];
    assert_eq!(value["writeFile"], "undefined");
    assert_eq!(value["found"], json!(["read_file"]), "the pool: not the flat greet, not the denied ones");
    assert!(value["fail"].as_str().unwrap().contains("not reachable"), "{value}");
}

#[test]
fn settings_errors_name_the_file_and_the_key() {
    let setup = Setup::new();
    let script = setup.script("s.js", "return 1");
    assert_usage_error(&setup.run(&["tools", "--settings", "missing.json"]), "the settings file missing.json does not exist");
    assert_usage_error(&setup.run(&["search", "x", "--settings", "."]), "the settings file . is a directory");
    let project = setup.workspace.path().join(".exec-host");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("settings.json"), "{\n  \"enableExec\": \"yes\"\n}").unwrap();
    for args in [vec!["run", script.as_str()], vec!["tools"], vec!["search", "x"]] {
        let output = setup.run(&args);
        assert_usage_error(&output, ".exec-host/settings.json: enableExec: invalid type: string \"yes\"");
        assert!(stderr(&output).contains("line 2"), "{}", stderr(&output));
    }
    std::fs::write(project.join("settings.json"), r#"{"permissions": {"deny": ["Bash(rm"]}}"#).unwrap();
    assert_usage_error(&setup.run(&["tools"]), "permissions.deny[0]: rule \"Bash(rm\"");
}

#[test]
fn the_declaration_file_type_checks_scripts_written_against_it() {
    let (setup, config) = pool_setup();
    let output = setup.run(&["tools", "--dts", "--mcp-config", &config]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let dts = stdout(&output);
    for member in [
        "  read_file(args: {",
        "  \"mcp__fx__get-user.profile\"(args: {",
        "  ToolSearch(args: {",
        "  log(...values: unknown[]): void;",
    ] {
        assert!(dts.contains(member), "{member:?} missing from\n{dts}");
    }
    assert!(!dts.contains("mcp__fx__fail"), "denied tools are not declared");
    std::fs::write(setup.workspace.path().join("tools.d.ts"), &dts).unwrap();
    let check = |name: &str, body: &str| -> Output {
        std::fs::write(
            setup.workspace.path().join(name),
            format!("export {{}};\nasync function script() {{\n{body}\n}}\nvoid script;\n"),
        )
        .unwrap();
        Command::new("node")
            .arg(test_packages().join("node_modules/typescript/bin/tsc"))
            .args(["--noEmit", "--strict", "--target", "es2022", "--lib", "es2022", "tools.d.ts", name])
            .current_dir(setup.workspace.path())
            .output()
            .unwrap()
    };
    let good = check(
        "good.ts",
        "const file = await tools.read_file({ path: 'notes.txt' });
         const profile = await tools['mcp__fx__get-user.profile']({ id: 'u1' });
         const { matches, total } = await tools.ToolSearch({ query: 'greet', max_results: 3 });
         const shaped = await tools.mcp__fx__shapes({
           mode: 'safe', at: { x: 1, y: 2 }, path: [{ x: 0, y: 0 }], pair: ['a', 1], either: { id: 3 },
           labels: { a: 'b' }, mixed: { known: true, extra: 4 }, tree: { label: 'root', children: [{ label: 'leaf' }] },
           'content-type': null, limit: null,
         });
         console.log(file, profile, matches[0].signature, total, shaped.echo);",
    );
    assert!(good.status.success(), "{}{}", stdout(&good), stderr(&good));
    let bad = check("bad.ts", "await tools.ToolSearch({ q: 'greet' }); await tools.read_file({ path: 3 });");
    let errors = stdout(&bad);
    assert!(!bad.status.success(), "a wrong call must not type-check");
    assert!(
        errors.contains("'q' does not exist") && errors.contains("Type 'number' is not assignable to type 'string'"),
        "{errors}"
    );
}

#[test]
fn tools_json_gives_the_announcement_of_a_fresh_conversation() {
    let (setup, config) = pool_setup();
    let object = json_of(&setup.run(&["tools", "--json", "--mcp-config", &config]));
    let announcement = object["announcement"].as_str().expect("an announcement: the pool is not empty");
    let names: Vec<&str> = announcement.lines().skip(1).collect();
    let pool: Vec<String> = serde_json::from_value(object["pool"].clone()).unwrap();
    assert_eq!(names, pool, "every pooled name, one per line, nothing else");
    assert!(object["guidance"].as_str().unwrap().starts_with("# Using your tools"));

    // Nothing to announce when every tool is declared flat.
    std::fs::write(setup.workspace.path().join("off.json"), r#"{"enableExec": false}"#).unwrap();
    let off = json_of(&setup.run(&["tools", "--json", "--mcp-config", &config, "--settings", "off.json"]));
    assert_eq!(off["announcement"], Value::Null);
    // Without any MCP server, Exec is declared over the workspace tools.
    let bare = Setup::new();
    let object = json_of(&bare.run(&["tools", "--json"]));
    assert_eq!(object["exec"], "declared");
    assert!(object["pool"].as_array().unwrap().contains(&json!("read_file")));
}

#[test]
fn run_honours_exec_s_own_authorization() {
    let setup = Setup::new();
    let script = setup.script("s.js", "await tools.write_file({ path: 'ran', content: '' }); return 1");
    std::fs::write(setup.workspace.path().join("deny.json"), r#"{"permissions": {"deny": ["Exec"]}}"#).unwrap();
    let output = setup.run(&["run", "--json", "--settings", "deny.json", &script]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let object = json_of(&output);
    assert_eq!(object["ok"], false);
    assert_eq!(object["error"], "`Exec` is denied by the permissions.deny rule `Exec` in deny.json");
    assert_eq!(object["calls"], json!([]));
    assert!(!setup.workspace.path().join("ran").exists(), "no script ran");

    std::fs::write(setup.workspace.path().join("off.json"), r#"{"enableExec": false}"#).unwrap();
    let output = setup.run(&["run", "--settings", "off.json", &script]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("`\"enableExec\": false` in off.json"), "{}", stdout(&output));
    assert!(!setup.workspace.path().join("ran").exists());
}

#[test]
fn a_long_result_is_compacted_and_kept_whole_in_a_file() {
    let setup = Setup::new();
    let script = setup.script("long.js", "return Array.from({ length: 3000 }, (_, i) => `line ${i}`).join('\\n')");
    let output = setup.run(&["run", &script]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.starts_with("line 0\n") && text.trim_end().ends_with("line 2999"), "head and tail are shown");
    assert!(text.contains("characters not shown: view_tool_call({ \"id\": \"run-"), "{}", &text[5990..6200]);
    let errors = stderr(&output);
    let file = errors.lines().find_map(|line| line.strip_prefix("[the whole result (")).expect("the file is named");
    let path = file.split(" characters) is in ").nth(1).unwrap().trim_end_matches(']');
    assert!(path.starts_with(setup.workspace.path().join(".state/exec-host/results").to_str().unwrap()), "{path}");
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(kept["text"].as_str().unwrap().contains("line 1500\n"), "the whole result is kept");
}

/// A script that writes a file, then reads it back.
const WRITES: &str = "await tools.write_file({ path: 'a.txt', content: 'x' }); return await tools.read_file({ path: 'a.txt' }).then((r) => r.content)";

#[test]
fn permission_flags_and_modes_apply_to_run() {
    let setup = Setup::new();
    let script = setup.script("s.js", WRITES);
    // run starts in bypassPermissions: the author wrote the script.
    assert_eq!(setup.run(&["run", &script]).status.code(), Some(0));
    // With no terminal, a call that must ask is refused, naming the flag and the rule.
    let output = setup.run(&["run", "--json", "--ask", "write_file", &script]);
    assert_eq!(output.status.code(), Some(1));
    let error = json_of(&output)["error"].as_str().unwrap().to_string();
    assert!(
        error.contains("`write_file` was denied: it needs approval (the permissions.ask rule `write_file` in the command line)"),
        "{error}"
    );
    assert!(
        error.contains("run with `--allow write_file`, or add \"write_file\" to permissions.allow in a settings file"),
        "{error}"
    );
    assert_eq!(json_of(&output)["calls"], json!(["write_file"]), "a refused call counts");
    // The default mode asks before writes, not before reads; an allow rule lets writes run.
    let reads = setup.script("r.js", "return (await tools.read_file({ path: 's.js' })).total_lines");
    assert_eq!(setup.run(&["run", "--permission-mode", "default", &reads]).status.code(), Some(0));
    let output = setup.run(&["run", "--permission-mode", "default", &script]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("the permission mode default asks before workspace edits"), "{}", stdout(&output));
    let allowed = setup.run(&["run", "--permission-mode", "default", "--allow", "write_file(*.txt)", &script]);
    assert_eq!(allowed.status.code(), Some(0), "{}", stdout(&allowed));
    let output = setup.run(&["run", "--permission-mode", "acceptEdits", &script]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    // A deny rule with a path applies in bypassPermissions too, and names where it came from.
    let output = setup.run(&["run", "--deny", "write_file(a.*)", "--allow", "write_file", &script]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout(&output).contains("`write_file` is denied by the permissions.deny rule `write_file(a.*)` in the command line")
    );
    // Bad rules and modes are usage errors.
    assert_usage_error(&setup.run(&["run", "--allow", "mcp__srv__tool(x)", &script]), "an MCP tool's rule takes no specifier");
    assert_usage_error(&setup.run(&["run", "--permission-mode", "yolo", &script]), "invalid value 'yolo'");
}

#[test]
fn hooks_and_malformed_settings_in_run() {
    let setup = Setup::new();
    let script = setup.script("s.js", WRITES);
    std::fs::write(setup.workspace.path().join("frozen.sh"), "cat > /dev/null\necho 'writes are frozen' >&2\nexit 2\n").unwrap();
    let hooks =
        json!({"hooks": {"PreToolUse": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "sh frozen.sh"}]}]}});
    std::fs::write(setup.workspace.path().join("hooks.json"), hooks.to_string()).unwrap();
    let output = setup.run(&["run", "--settings", "hooks.json", &script]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("PreToolUse:write_file hook error: writes are frozen"), "{}", stdout(&output));
    assert!(!setup.workspace.path().join("a.txt").exists());

    let bad = "{\"hooks\": {\"PreToolUse\": [\n  {\"matcher\": \"(\", \"hooks\": []}\n]}}";
    std::fs::write(setup.workspace.path().join("bad-hooks.json"), bad).unwrap();
    let output = setup.run(&["run", "--settings", "bad-hooks.json", &script]);
    assert_usage_error(&output, "bad-hooks.json: hooks.PreToolUse[0].matcher");
    assert!(stderr(&output).contains("line 2"), "{}", stderr(&output));
    let bad = "{\"permissions\": {\n  \"deny\": [\"read_file(\"]\n}}";
    std::fs::write(setup.workspace.path().join("bad-rules.json"), bad).unwrap();
    let output = setup.run(&["run", "--settings", "bad-rules.json", &script]);
    assert_usage_error(&output, "bad-rules.json: permissions.deny[0]");
    assert!(stderr(&output).contains("line 2"), "{}", stderr(&output));
}

/// A pseudo-terminal: the controlling side and the terminal a child is given.
fn pseudo_terminal() -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd;
    let (mut controller, mut terminal) = (0, 0);
    // SAFETY: openpty(3) writes two new descriptors, which the files below then own.
    let status =
        unsafe { libc::openpty(&mut controller, &mut terminal, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
    assert_eq!(status, 0, "openpty: {}", std::io::Error::last_os_error());
    unsafe { (std::fs::File::from_raw_fd(controller), std::fs::File::from_raw_fd(terminal)) }
}

/// Runs `args` with stdin and stderr on a terminal, answering each prompt with the next of
/// `answers`; gives the exit status, stdout and what the terminal showed.
fn run_on_a_terminal(setup: &Setup, args: &[&str], answers: &[&str]) -> (Option<i32>, String, String) {
    on_a_terminal(setup, args, answers, false)
}

/// [`run_on_a_terminal`], with stdout on the terminal too when `all_output` is set.
fn on_a_terminal(setup: &Setup, args: &[&str], answers: &[&str], all_output: bool) -> (Option<i32>, String, String) {
    use std::io::Read;
    let (mut controller, terminal) = pseudo_terminal();
    let output_to = if all_output { Stdio::from(terminal.try_clone().unwrap()) } else { Stdio::piped() };
    let mut child = exec_host(setup.workspace.path(), &setup.cache)
        .args(args)
        .stdin(terminal.try_clone().unwrap())
        .stderr(terminal)
        .stdout(output_to)
        .spawn()
        .unwrap();
    let (shown, received) = std::sync::mpsc::channel();
    let mut reader = controller.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        // Ends with an error (EIO) once the child has closed the terminal.
        while let Ok(n @ 1..) = reader.read(&mut buffer) {
            if shown.send(buffer[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut screen = String::new();
    let mut answered = 0;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "no end; the terminal shows: {screen}");
        if let Ok(bytes) = received.recv_timeout(std::time::Duration::from_millis(50)) {
            screen.push_str(&String::from_utf8_lossy(&bytes));
        }
        if screen.matches("Allow it?").count() > answered {
            let answer = answers.get(answered).unwrap_or_else(|| panic!("an unexpected prompt: {screen}"));
            controller.write_all(format!("{answer}\n").as_bytes()).unwrap();
            answered += 1;
        }
    }
    let output = child.wait_with_output().unwrap();
    // What was still on its way through the terminal.
    while let Ok(bytes) = received.recv_timeout(std::time::Duration::from_millis(200)) {
        screen.push_str(&String::from_utf8_lossy(&bytes));
    }
    assert_eq!(answered, answers.len(), "prompts answered; the terminal shows: {screen}");
    (output.status.code(), stdout(&output), screen)
}

#[test]
fn a_terminal_prompt_allows_once_always_or_not() {
    let setup = Setup::new();
    let script = setup.script("s.js", WRITES);
    let settings = setup.workspace.path().join(".exec-host/settings.json");
    let ask = ["run", "--ask", "write_file", script.as_str()];

    let (status, out, screen) = run_on_a_terminal(&setup, &ask, &["n"]);
    assert_eq!(status, Some(1), "{out}");
    assert!(out.contains("`write_file` was denied: the user said no at the terminal"), "{out}");
    assert!(screen.contains("`write_file` wants to run, called by the script of Exec call"), "{screen}");
    assert!(screen.contains(r#"{"path":"a.txt","content":"x"}"#), "the input is shown: {screen}");
    assert!(screen.contains("It asks because of the permissions.ask rule `write_file` in the command line."), "{screen}");
    assert!(!setup.workspace.path().join("a.txt").exists());

    let (status, out, _) = run_on_a_terminal(&setup, &ask, &["y"]);
    assert_eq!((status, out.trim_end().ends_with('x')), (Some(0), true), "{out}");
    assert!(!settings.exists(), "once saves nothing");

    // "Always" saves the rule to the project settings; the next run in default mode does not ask.
    let (status, _, _) = run_on_a_terminal(&setup, &["run", "--permission-mode", "default", &script], &["a"]);
    assert_eq!(status, Some(0));
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(saved, json!({"permissions": {"allow": ["write_file"]}}));
    let (status, _, _) = run_on_a_terminal(&setup, &["run", "--permission-mode", "default", &script], &[]);
    assert_eq!(status, Some(0));
}

#[test]
fn a_terminal_is_shown_escape_sequences_not_given_them() {
    let setup = Setup::new();
    let script = setup.script("s.js", "console.log('\\u001b]0;owned\\u0007'); return '\\u001b[2Jcleared\\u202e'");
    let (status, _, screen) = on_a_terminal(&setup, &["run", &script], &[], true);
    assert_eq!(status, Some(0), "{screen}");
    assert!(screen.contains("\\u{1b}]0;owned\\u{7}") && screen.contains("\\u{1b}[2Jcleared\\u{202e}"), "{screen}");
    // The only escape is the host's own, which erases its status line.
    let without_status = screen.replace("\r\u{1b}[2K", "\r");
    assert!(!without_status.contains('\u{1b}'), "no escape of the script reached the terminal: {screen:?}");
    // Into a pipe, the text is the script's own.
    let output = setup.run(&["run", &script]);
    assert!(stdout(&output).contains("\u{1b}[2Jcleared"), "{}", stdout(&output));
}

#[test]
fn a_stdio_server_gets_a_small_environment_and_its_entry_expands_variables() {
    let setup = Setup::new();
    let dump = setup.workspace.path().join("server-env.txt");
    // A "server" that writes its environment down and exits; its start fails, and the run
    // goes on without it.
    let config = json!({"mcpServers": {
        "envdump": {"command": "${EXEC_HOST_TEST_SHELL:-sh}", "args": ["-c", "env > \"$0\"", "${EXEC_HOST_TEST_DUMP}"],
                    "env": {"CONFIGURED": "yes-${EXEC_HOST_TEST_TOKEN}"}},
        "off": {"command": "does-not-exist", "disabled": true},
        "legacy": {"type": "sse", "url": "https://example.invalid/sse"}
    }});
    std::fs::write(setup.workspace.path().join("servers.json"), config.to_string()).unwrap();
    let script = setup.script("s.js", "return 1");
    let output = exec_host(setup.workspace.path(), &setup.cache)
        .args(["run", "--mcp-config", "servers.json", &script])
        .env("EXEC_HOST_TEST_DUMP", &dump)
        .env("EXEC_HOST_TEST_TOKEN", "t0k")
        .env("SECRET_API_KEY", "must-not-leak")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let environment = std::fs::read_to_string(&dump).expect("the server ran with the expanded arguments");
    let names: Vec<&str> = environment.lines().filter_map(|line| line.split_once('=').map(|(name, _)| name)).collect();
    assert!(environment.lines().any(|line| line == "CONFIGURED=yes-t0k"), "{environment}");
    assert!(names.contains(&"PATH") && names.contains(&"HOME"), "{names:?}");
    assert!(!environment.contains("must-not-leak") && !names.contains(&"EXEC_HOST_TEST_TOKEN"), "{names:?}");
    // Python keeps its working directory, the workspace, off its import path.
    assert!(environment.lines().any(|line| line == "PYTHONSAFEPATH=1"), "{environment}");
    for name in &names {
        assert!(
            exec_host::mcp::INHERITED_ENV.contains(name)
                || ["CONFIGURED", "PYTHONSAFEPATH", "PWD", "SHLVL", "_", "OLDPWD"].contains(name),
            "{name} reached the server"
        );
    }
    // The disabled entry is not started; the SSE one is skipped with a warning naming it.
    assert!(!stderr(&output).contains("does-not-exist"), "{}", stderr(&output));
    assert!(stderr(&output).contains("server `legacy` is skipped: it uses the SSE transport"), "{}", stderr(&output));
}

#[test]
fn code_given_with_e_runs_and_the_result_comes_before_the_servers_close() {
    let setup = Setup::new();
    let output = setup.run(&["run", "-e", "console.log('hi'); return 6 * 7", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let result = json_of(&output);
    assert_eq!((result["value"].clone(), result["logs"].clone()), (json!(42), json!(["hi"])));
    assert_usage_error(&setup.run(&["run", "-e", "  "]), "the code given with -e is empty");
    let both = setup.run(&["run", "-e", "return 1", "script.js"]);
    assert_eq!(both.status.code(), Some(2), "{}", stderr(&both));
    let neither = setup.run(&["run"]);
    assert_eq!(neither.status.code(), Some(2), "{}", stderr(&neither));

    // A server that lingers once its input closes (it is killed after a grace of its own):
    // the result is printed before the run waits for it.
    let config = json!({"mcpServers": {"fx": {"command": fixture_mcp_server(), "args": ["--linger"]}}});
    std::fs::write(setup.workspace.path().join("servers.json"), config.to_string()).unwrap();
    let mut child = exec_host(setup.workspace.path(), &setup.cache)
        .args(["run", "--mcp-config", "servers.json", "-e", "return (await tools.mcp__fx__echo({ v: 5 })).v"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let mut first = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut first).unwrap();
    let printed = started.elapsed();
    child.wait().unwrap();
    let ended = started.elapsed();
    assert!(!first.is_empty(), "the result was printed");
    // The lingering server is given its grace before it is killed; the result did not wait.
    assert!(ended - printed >= std::time::Duration::from_millis(400), "printed {printed:?}, ended {ended:?}");
}

#[test]
fn a_server_the_settings_deny_entirely_is_not_started() {
    let setup = Setup::new();
    let marker = setup.workspace.path().join("started.txt");
    // Each "server" notes that it ran, then becomes the fixture server.
    let noting = |name: &str| json!({"command": "sh", "args": ["-c", format!("echo {name} >> \"$0\"; exec \"$1\""), &marker, fixture_mcp_server()]});
    let config = mcp_config(&setup, json!({"kept": noting("kept"), "gone": noting("gone"), "starred": noting("starred")}));
    std::fs::write(
        setup.workspace.path().join("deny.json"),
        r#"{"permissions": {"deny": ["mcp__gone", "mcp__starred__*", "mcp__kept__fail"]}}"#,
    )
    .unwrap();
    let script = setup.script(
        "s.js",
        "let why; try { await tools.mcp__gone__greet({ name: 'x' }); } catch (e) { why = e.message; }
         return { greeting: await tools.mcp__kept__greet({ name: 'x' }), why };",
    );
    let output = setup.run(&["run", "--json", "--settings", "deny.json", "--mcp-config", &config, &script]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let value = &json_of(&output)["value"];
    assert_eq!(value["greeting"], "hello, x", "a server denied one tool still starts");
    let why = value["why"].as_str().unwrap();
    assert!(why.contains("the permissions.deny rule `mcp__gone` in") && why.contains("deny.json"), "{why}");
    let started = std::fs::read_to_string(&marker).unwrap();
    assert_eq!(started.lines().collect::<Vec<_>>(), ["kept"], "only the server with a reachable tool ran");
    assert!(!stderr(&output).contains("gone"), "not starting a denied server is no warning: {}", stderr(&output));
}

#[test]
fn a_terminal_sees_calls_and_console_lines_while_the_script_runs() {
    let setup = Setup::new();
    let config = mcp_config(&setup, json!({"fx": {"command": fixture_mcp_server()}}));
    let script = setup.script(
        "s.js",
        "console.log('starting');
         const quick = tools.mcp__fx__slow({ ms: 300 });
         const long = tools.mcp__fx__slow({ ms: 900 });
         await quick;
         console.warn('one is back');
         await long;
         return 'done';",
    );
    let (status, stdout, screen) = run_on_a_terminal(&setup, &["run", "--mcp-config", &config, &script], &[]);
    assert_eq!(status, Some(0), "{screen}");
    assert!(stdout.contains("done"), "{stdout}");
    // Console lines as they happen, the count with the tools being waited on, and the
    // status line erased before the end.
    let first = screen.find("starting").unwrap_or_else(|| panic!("{screen:?}"));
    let both = screen.find("2 tool calls, waiting on mcp__fx__slow, mcp__fx__slow").unwrap_or_else(|| panic!("{screen:?}"));
    let warned = screen.find("[warn] one is back").unwrap_or_else(|| panic!("{screen:?}"));
    let one = screen.rfind("2 tool calls, waiting on mcp__fx__slow\r").unwrap_or_else(|| panic!("{screen:?}"));
    assert!(first < both && both < warned && warned < one, "in the order they happened: {screen:?}");
    let summary = screen.rfind("2 tool calls\r\n").unwrap_or_else(|| panic!("{screen:?}"));
    let erased = screen.rfind("\r\u{1b}[2K").unwrap();
    assert!(one < erased && erased < summary, "the status line is gone before the summary: {screen:?}");

    // --quiet shows none of it; --json output is the same object as ever.
    let (status, stdout, screen) =
        run_on_a_terminal(&setup, &["run", "--quiet", "--json", "--mcp-config", &config, &script], &[]);
    assert_eq!(status, Some(0), "{screen}");
    assert!(!screen.contains("waiting on") && !screen.contains("starting"), "{screen:?}");
    let result: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!((result["value"].clone(), result["logs"].clone()), (json!("done"), json!(["starting", "[warn] one is back"])));
    // Into a pipe, standard error has no progress.
    let output = setup.run(&["run", "--mcp-config", &config, &script]);
    assert!(!stderr(&output).contains("waiting on") && !stderr(&output).contains('\u{1b}'), "{}", stderr(&output));
}

#[test]
fn typescript_scripts_run_with_their_types_erased_and_errors_at_their_own_positions() {
    let setup = Setup::new();
    std::fs::write(setup.workspace.path().join("notes.txt"), "one\ntwo\n").unwrap();
    let script = setup.script(
        "report.ts",
        "interface Line { n: number; text: string }
enum Level { Low = 1, High }
enum Mode { Read = 'r', Write = 'w' }
const file = await tools.read_file({ path: 'notes.txt' }) as { content: string };
const lines: Line[] = file.content.trim().split('\\n').map((text: string, n: number): Line => ({ n, text }));
function last<T>(items: T[]): T | undefined { return items[items.length - 1]; }
const listed = await tools.ls();
return { last: last(lines)!.text, level: Level.High, low: Level[1], mode: Mode.Write, reverse: Object.keys(Mode), entries: listed.entries.length };",
    );
    let output = setup.run(&["run", "--json", &script]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        json_of(&output)["value"],
        json!({"last": "two", "level": 2, "low": "Low", "mode": "w", "reverse": ["Read", "Write"], "entries": 2})
    );

    // A syntax error past the types is reported where it was written.
    let broken = setup.script("broken.ts", "const a: number = 1;\nconst b: string[] = [];\nconst c = ;\nreturn a;");
    let output = setup.run(&["run", &broken]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("SyntaxError: Unexpected token (line 3, column 11)"), "{}", stdout(&output));
    // A runtime error's frame is the original line, not the erased script's.
    let thrown = setup.script("thrown.ts", "type T = { a: number };\n\n\nconst v: T | null = null as T | null;\nreturn v!.a;");
    let output = setup.run(&["run", &thrown]);
    assert!(stdout(&output).contains("script.js:5:"), "{}", stdout(&output));
    // Plain JavaScript keeps the engine's own message.
    let js = setup.script("broken.js", "const a = 1;\nconst c = ;");
    assert!(stdout(&setup.run(&["run", &js])).contains("unexpected token in expression: ';' (line 2, column 11)"));
}

#[test]
fn a_failed_call_names_its_tool_and_the_line_and_a_missing_one_is_named() {
    let setup = Setup::new();
    let script = setup.script("s.js", "const a = 1;\nconst b = 2;\nawait tools.read_file({ path: 'absent.txt' });");
    let output = setup.run(&["run", &script]);
    let text = stdout(&output);
    assert!(text.contains("Error: read_file: `absent.txt` does not exist in the workspace"), "{text}");
    assert!(text.contains("script.js:3:"), "the line of the await: {text}");

    let script = setup.script("t.js", "\nconst r = await tools.raed_file({ path: 'x' });");
    let text = stdout(&setup.run(&["run", &script]));
    assert!(
        text.contains(
            "TypeError: tools.raed_file is not a function (`raed_file` is not a tool this script can reach; \
             tools.ToolSearch finds tools by keyword. Did you mean `read_file`"
        ),
        "{text}"
    );
    let text = stdout(&setup.run(&["run", "-e", "const helpers = {};\nhelpers.format(1);"]));
    assert!(text.contains("TypeError: helpers.format is not a function\n"), "{text}");
}

#[test]
fn a_script_is_type_checked_as_exec_runs_it() {
    let (setup, config) = pool_setup();
    let tsc = |file: &str| -> Output {
        Command::new("node")
            .arg(test_packages().join("node_modules/typescript/bin/tsc"))
            .args(["--noEmit", "--strict", "--target", "es2022", "--lib", "es2022", file])
            .current_dir(setup.workspace.path())
            .output()
            .unwrap()
    };
    let checkable = |name: &str, script: &str| {
        std::fs::write(setup.workspace.path().join(name), script).unwrap();
        let output = setup.run(&["tools", "--dts", "--script", name, "--mcp-config", &config]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let file = format!("{name}.check.ts");
        std::fs::write(setup.workspace.path().join(&file), stdout(&output)).unwrap();
        file
    };
    // Top-level await and return, and the calls that work at run time (ls() takes no argument).
    let good = checkable(
        "good.ts",
        "const listed = await tools.ls();\nconst found = await tools.glob({ pattern: '*.txt' });\nreturn [listed.total, found.matches];",
    );
    let checked = tsc(&good);
    assert!(checked.status.success(), "{}{}", stdout(&checked), stderr(&checked));
    // An error is reported at the script's own line.
    let bad = checkable("bad.ts", "const listed = await tools.ls();\n\nconst n: string = listed.total;\nreturn n;");
    let errors = stdout(&tsc(&bad));
    assert!(errors.contains("bad.ts.check.ts(3,7): error TS2322"), "{errors}");
    assert_usage_error(&setup.run(&["tools", "--script", "good.ts"]), "--dts");
}
