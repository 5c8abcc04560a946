//! MCP servers from the command line: configured, failing, denied, and never left behind.

use std::process::Stdio;

use serde_json::json;

use crate::common::{exec_host, fixture_mcp_server};
use crate::{Setup, assert_usage_error, json_of, mcp_config, send, stderr, stdout, wait_until};

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
fn warnings_read_as_the_commands_own_in_one_format() {
    let setup = Setup::new();
    let config = mcp_config(&setup, json!({"old": {"type": "sse", "url": "http://127.0.0.1:9/sse"}}));
    let script = setup.script("s.js", "return 1");
    let output = setup.run(&["run", "--mcp-config", &config, &script]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let warned = stderr(&output);
    let line = warned.lines().find(|line| line.contains("SSE transport")).unwrap_or_else(|| panic!("no warning: {warned}"));
    assert!(line.starts_with("exec-host: warning: "), "{line}");
    assert!(!warned.contains(" WARN "), "{warned}");
    // A server that did not start is named, and so is the command that checks the set-up.
    let config = mcp_config(&setup, json!({"gone": {"command": "/nonexistent/exec-host-test-server"}}));
    let output = setup.run(&["run", "--mcp-config", &config, &script]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let warned = stderr(&output);
    assert!(warned.contains("exec-host: warning: ") && warned.contains("gone"), "{warned}");
    assert!(warned.contains("`exec-host doctor` with the same flags checks each server"), "{warned}");
}

#[test]
fn mcp_list_login_and_logout_say_what_each_server_is() {
    let setup = Setup::new();
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let config = mcp_config(
        &setup,
        json!({"fx": {"command": fixture_mcp_server()}, "gone": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp")}}),
    );
    // Outside the workspace, where the host keeps tokens.
    let private = tempfile::tempdir().unwrap();
    let credentials = private.path().join("credentials.json");
    let credentials = credentials.to_str().unwrap();
    let output = setup.run(&["mcp", "list", "--json", "--mcp-config", &config, "--mcp-credentials", credentials]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines: Vec<serde_json::Value> = stdout(&output).lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert_eq!(lines.len(), 2, "{}", stdout(&output));
    let fx = lines.iter().find(|line| line["name"] == "fx").unwrap();
    assert_eq!(fx["connected"], true, "{fx}");
    assert!(fx["tools"].as_u64().unwrap() > 5, "{fx}");
    assert!(fx["transport"].as_str().unwrap().starts_with("stdio: "), "{fx}");
    assert!(fx["signIn"].is_null(), "a stdio server has no sign-in: {fx}");
    let gone = lines.iter().find(|line| line["name"] == "gone").unwrap();
    assert_eq!(gone["connected"], false, "{gone}");
    assert!(gone["error"].as_str().unwrap().contains("cannot reach"), "{gone}");
    assert_eq!(gone["signIn"], "not signed in", "{gone}");

    let output = setup.run(&["mcp", "login", "fx", "--mcp-config", &config, "--mcp-credentials", credentials]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("only HTTP servers sign in with OAuth"), "{}", stderr(&output));
    let output = setup.run(&["mcp", "login", "nobody", "--mcp-config", &config, "--mcp-credentials", credentials]);
    assert_usage_error(
        &output,
        "no MCP server or API is named `nobody` (pass --mcp-config FILE); the configured servers: `fx`, `gone`; the configured APIs: none",
    );
    let output = setup.run(&["mcp", "logout", "gone", "--mcp-config", &config, "--mcp-credentials", credentials]);
    assert_eq!(output.status.code(), Some(0));
    assert!(stderr(&output).contains("`gone` was not signed in"), "{}", stderr(&output));
}

#[test]
fn run_answers_a_servers_input_request_with_its_defaults_when_told_to() {
    let setup = Setup::new();
    let config = mcp_config(&setup, json!({"fx": {"command": fixture_mcp_server(), "env": {"FIXTURE_ELICIT": "1"}}}));
    let script = setup.script("ask.js", "return await tools.mcp__fx__ask({})");
    let output = setup.run(&["run", "--json", "--accept-input-defaults", "--mcp-config", &config, &script]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let value = &json_of(&output)["value"];
    assert_eq!(value["action"], "accept", "{value}");
    assert_eq!(value["content"], json!({"name": "John Doe", "age": 30, "status": "active", "verified": true}));
    // Off a terminal and without the flag, nobody is asked: the request is declined.
    let output = setup.run(&["run", "--json", "--mcp-config", &config, &script]);
    let result = json_of(&output);
    assert_eq!(result["value"], json!({"action": "decline", "content": null}), "{}", stdout(&output));
    assert!(stderr(&output).contains("nobody here can answer: declined"), "{}", stderr(&output));
    let note = result["call_details"][0]["note"].as_str().unwrap_or_else(|| panic!("no note in the call record: {result}"));
    assert!(note.contains("nobody here could answer: declined"), "{note}");
}

/// The OAuth-protected server of tests/python/oauth_server.py (the official Python SDK's
/// server auth), its tokens living `token_seconds`; killed when dropped.
struct PythonOAuthServer {
    child: std::process::Child,
    url: String,
    log: tempfile::NamedTempFile,
}

impl PythonOAuthServer {
    fn start(token_seconds: u32) -> Self {
        use std::io::BufRead;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let log = tempfile::NamedTempFile::new().unwrap();
        let mut child = std::process::Command::new(crate::common::python_sdk())
            .arg(root.join("tests/python/oauth_server.py"))
            .arg(log.path())
            .arg(token_seconds.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert!(line.starts_with("http://"), "the server did not start: {line:?}");
        let url = line.trim().to_string();
        // The URL is printed before the server listens.
        let address = url.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
        let listening = (0..200).any(|_| {
            std::net::TcpStream::connect(&address).is_ok() || {
                std::thread::sleep(std::time::Duration::from_millis(50));
                false
            }
        });
        assert!(listening, "the server does not listen at {address}");
        PythonOAuthServer { child, url, log }
    }

    /// What the server logged: its grants and calls.
    fn events(&self) -> Vec<String> {
        std::fs::read_to_string(self.log.path()).unwrap().lines().map(str::to_string).collect()
    }
}

impl Drop for PythonOAuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_python_sdk_server_behind_oauth_is_signed_in_to_once_and_its_expiring_token_refreshed_mid_run() {
    let server = PythonOAuthServer::start(2);
    let setup = Setup::new();
    let config = mcp_config(&setup, json!({"notes": {"type": "http", "url": server.url}}));
    // Outside the workspace, where the host keeps tokens.
    let private = tempfile::tempdir().unwrap();
    let credentials = private.path().join("credentials.json");
    let credentials = credentials.to_str().unwrap();
    let follow = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/python/follow_redirect.py");
    let browser = format!("{} {}", crate::common::python_sdk().display(), follow.display());

    // Without a sign-in, run cannot start the server and says how to sign in.
    let script = setup.script(
        "notes.js",
        "const first = await tools.mcp__notes__note_count({});
         await new Promise(resolve => setTimeout(resolve, 3000));
         const second = await tools.mcp__notes__note_count({});
         return [first, second]",
    );
    let output = setup.run(&["run", "--mcp-config", &config, "--mcp-credentials", credentials, &script]);
    assert!(stderr(&output).contains("exec-host mcp login notes"), "{}", stderr(&output));

    let login = exec_host(setup.workspace.path(), &setup.cache)
        .args(["mcp", "login", "notes", "--mcp-config", &config, "--mcp-credentials", credentials])
        .env("BROWSER", &browser)
        .output()
        .unwrap();
    assert_eq!(login.status.code(), Some(0), "{}", stderr(&login));
    assert_eq!(server.events(), ["authorization_code"], "dynamic registration, PKCE and the code exchange");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(credentials).unwrap().permissions().mode() & 0o777, 0o600);
    // The tokens kept, wherever they sit in the file.
    fn tokens(value: &serde_json::Value, into: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => map.iter().for_each(|(key, value)| match value.as_str() {
                Some(token) if key.ends_with("_token") || key.ends_with("Token") => into.push(token.to_string()),
                _ => tokens(value, into),
            }),
            serde_json::Value::Array(items) => items.iter().for_each(|item| tokens(item, into)),
            _ => {}
        }
    }
    let mut kept = Vec::new();
    tokens(&serde_json::from_str(&std::fs::read_to_string(credentials).unwrap()).unwrap(), &mut kept);
    assert!(kept.len() >= 2, "an access and a refresh token are kept");

    // The token expires while the script waits: the next call goes with a refreshed one.
    let output = setup.run(&["run", "--json", "--mcp-config", &config, "--mcp-credentials", credentials, &script]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let calls = json_of(&output)["value"].clone();
    let text =
        |call: &serde_json::Value| call.as_str().or(call["result"].as_str()).unwrap_or_else(|| panic!("{calls}")).to_string();
    let (first, second) = (text(&calls[0]), text(&calls[1]));
    assert!(first.starts_with("called with ...") && second.starts_with("called with ..."), "{calls}");
    assert_ne!(first, second, "the second call carried another token");
    let events = server.events();
    assert_eq!(events.iter().filter(|e| *e == "authorization_code").count(), 1, "no second sign-in: {events:?}");
    assert!(events.iter().any(|e| e == "refresh_token"), "{events:?}");
    // No token reaches any output.
    for secret in &kept {
        for text in [stdout(&output), stderr(&output), stdout(&login), stderr(&login)] {
            assert!(!text.contains(secret.as_str()), "a token was printed: {text}");
        }
    }
    // The refreshed tokens were kept: a later run needs no sign-in either.
    let output = setup.run(&["run", "--json", "--mcp-config", &config, "--mcp-credentials", credentials, &script]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(server.events().iter().filter(|e| *e == "authorization_code").count(), 1);
}

/// `$BROWSER` for the tests: `tests/python/follow_redirect.py`, which follows the
/// authorization URL to the loopback listener, with its `options`.
pub(crate) fn follow_redirect(options: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    format!("{} {} {options}", crate::common::python_sdk().display(), root.join("tests/python/follow_redirect.py").display())
}

#[test]
fn a_hostile_authorization_server_gets_a_clear_refusal_quickly_and_no_token_is_kept_or_shown() {
    use std::io::BufRead;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = crate::common::python_sdk();
    // (mode, what the refusal says, whether the browser is sent to the authorization URL)
    let cases = [
        ("redirect", "redirect to non-same-origin URL rejected", false),
        ("huge", "response body exceeds 1048576 bytes", false),
        ("endless", "response body exceeds 1048576 bytes", false),
        ("malformed", "none published usable metadata", false),
        ("issuer", "issuer mismatch", false),
        ("error", "invalid_grant: the code was made up", true),
        ("rejected", "refused the token of a fresh sign-in", true),
        // URLs a server chose that are not https, nor http on a loopback host.
        ("authorize=file:///etc/passwd", "the authorization endpoint `file:///etc/passwd` is refused", false),
        (
            "authorize=javascript:alert(document.cookie)",
            "the authorization endpoint `javascript:alert(document.cookie)` is refused",
            false,
        ),
        ("authorize=data:text/html,<script>alert(1)</script>", "the authorization endpoint `data:text/html,<script>", false),
        ("authorize=ftp://127.0.0.1/authorize", "the authorization endpoint `ftp://127.0.0.1/authorize` is refused", false),
        (
            "authorize=http://auth.example/authorize",
            "the authorization endpoint `http://auth.example/authorize` is refused",
            false,
        ),
        ("token=http://auth.example/token", "the token endpoint `http://auth.example/token` is refused", false),
        (
            "resource-metadata=http://auth.example/.well-known/oauth-protected-resource",
            "the protected resource metadata `http://auth.example/.well-known/oauth-protected-resource` is refused",
            false,
        ),
    ];
    for (mode, says, opens) in cases {
        let mut server = std::process::Command::new(&python)
            .arg(root.join("tests/python/hostile_auth_server.py"))
            .arg(mode)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut url = String::new();
        std::io::BufReader::new(server.stdout.take().unwrap()).read_line(&mut url).unwrap();
        let setup = Setup::new();
        let config = mcp_config(&setup, json!({"hostile": {"type": "http", "url": url.trim()}}));
        let private = tempfile::tempdir().unwrap();
        let credentials = private.path().join("credentials.json");
        let opened = private.path().join("opened");
        let started = std::time::Instant::now();
        let login = exec_host(setup.workspace.path(), &setup.cache)
            .args(["mcp", "login", "hostile", "--wait", "20", "--mcp-config", &config])
            .args(["--mcp-credentials", credentials.to_str().unwrap()])
            .env("BROWSER", follow_redirect(&format!("--opened {}", opened.display())))
            .output()
            .unwrap();
        let _ = server.kill();
        let other = {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut server.stderr.take().unwrap(), &mut text);
            text
        };
        let _ = server.wait();
        let said = stderr(&login);
        assert_eq!(login.status.code(), Some(1), "{mode}: {said}");
        assert!(said.contains("cannot sign in to MCP server `hostile`") && said.contains(says), "{mode}: {said}");
        assert!(started.elapsed() < std::time::Duration::from_secs(15), "{mode}: no long wait ({:?})", started.elapsed());
        assert!(!said.contains("tok-for-elsewhere") && !stdout(&login).contains("tok-for-elsewhere"), "{mode}: {said}");
        let kept = std::fs::read_to_string(&credentials).unwrap_or_default();
        assert!(!kept.contains("tok-for-elsewhere"), "{mode}: a refused token is not kept: {kept}");
        assert!(!other.contains("other "), "{mode}: nothing was sent to the other origin: {other}");
        assert_eq!(opened.exists(), opens, "{mode}: whether the browser was sent anywhere");
    }
}

#[test]
fn a_sign_in_completes_promptly_while_silent_connections_crowd_the_loopback_listener() {
    let server = PythonOAuthServer::start(3600);
    let setup = Setup::new();
    let config = mcp_config(&setup, json!({"notes": {"type": "http", "url": server.url}}));
    let private = tempfile::tempdir().unwrap();
    let credentials = private.path().join("credentials.json");
    let started = std::time::Instant::now();
    // Twelve connections that send nothing reach the listener before the redirect does.
    let login = exec_host(setup.workspace.path(), &setup.cache)
        .args(["mcp", "login", "notes", "--wait", "120", "--mcp-config", &config])
        .args(["--mcp-credentials", credentials.to_str().unwrap()])
        .env("BROWSER", follow_redirect("--crowd 12"))
        .output()
        .unwrap();
    assert_eq!(login.status.code(), Some(0), "{}", stderr(&login));
    assert_eq!(server.events(), ["authorization_code"]);
    // Served one after another they held it for a minute; side by side, not at all.
    assert!(started.elapsed() < std::time::Duration::from_secs(15), "the sign-in took {:?}", started.elapsed());
}

#[test]
fn a_login_whose_tokens_cannot_be_saved_fails_saying_they_were_not_saved() {
    let server = PythonOAuthServer::start(3600);
    let setup = Setup::new();
    let config = mcp_config(&setup, json!({"notes": {"type": "http", "url": server.url}}));
    let private = tempfile::tempdir().unwrap();
    let elsewhere = private.path().join("elsewhere.json");
    std::fs::write(&elsewhere, "{}").unwrap();
    let link = private.path().join("link.json");
    std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
    let folder = private.path().join("folder.json");
    std::fs::create_dir(&folder).unwrap();
    for (credentials, why) in [(&link, "is a link, which is not followed"), (&folder, "is not a plain file")] {
        let login = exec_host(setup.workspace.path(), &setup.cache)
            .args(["mcp", "login", "notes", "--wait", "20", "--mcp-config", &config])
            .args(["--mcp-credentials", credentials.to_str().unwrap()])
            .env("BROWSER", follow_redirect(""))
            .output()
            .unwrap();
        let said = stderr(&login);
        assert_eq!(login.status.code(), Some(1), "{said}");
        assert!(said.contains("tokens were NOT saved") && said.contains(why), "{said}");
        assert!(!said.contains("are kept in"), "{said}");
    }
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "{}", "nothing is written through the link");
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0);
}

#[test]
fn a_credentials_file_the_workspace_reaches_is_refused_however_it_is_spelled() {
    let setup = Setup::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let config = mcp_config(&setup, json!({"remote": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp")}}));
    let outside = tempfile::tempdir().unwrap();
    let workspace = std::fs::canonicalize(setup.workspace.path()).unwrap();
    let name = workspace.file_name().unwrap().to_str().unwrap();
    std::os::unix::fs::symlink(&workspace, outside.path().join("into")).unwrap();
    let spellings = [
        "credentials.json".to_string(),
        format!(".rt/nx/../../../{name}/credentials.json"),
        outside.path().join("into/credentials.json").display().to_string(),
    ];
    for credentials in &spellings {
        for command in ["login", "logout"] {
            let output = setup.run(&["mcp", command, "remote", "--mcp-config", &config, "--mcp-credentials", credentials]);
            assert_usage_error(&output, "is inside the workspace");
        }
    }
    assert!(!workspace.join(".rt").exists(), "no folder is made on the way");
    assert!(!workspace.join("credentials.json").exists());
}
