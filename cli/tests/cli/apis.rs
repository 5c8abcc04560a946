//! HTTP APIs from the command line: a FastAPI app (tests/python/api_app.py, pinned with the
//! MCP Python SDK's venv) described by its own /openapi.json (OpenAPI 3.1) fetched by URL,
//! one API of it behind a bearer token from the environment and one behind OAuth 2.1's
//! client credentials, both kept in the host.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use crate::common::python_sdk;
use crate::{Setup, stderr, stdout};

const BEARER: &str = "notes-bearer-5ecret";
const CLIENT_ID: &str = "reports-client";
const CLIENT_SECRET: &str = "reports-client-5ecret";

/// The FastAPI app, stopped when dropped.
struct App {
    child: Child,
    base: String,
}

impl App {
    fn start() -> Self {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut child = Command::new(python_sdk())
            .arg(root.join("tests/python/api_app.py"))
            .args([BEARER, CLIENT_ID, CLIENT_SECRET])
            .stdout(Stdio::piped())
            .spawn()
            .expect("the FastAPI app starts");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port: u16 = line.trim().parse().unwrap_or_else(|_| panic!("the app printed {line:?}, not its port"));
        App { child, base: format!("http://127.0.0.1:{port}") }
    }
}

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_fastapi_app_is_reached_from_scripts_with_its_credentials_kept_in_the_host() {
    let app = App::start();
    let setup = Setup::new();
    let spec = format!("{}/openapi.json", app.base);
    let config = json!({ "apis": {
        "notes": { "spec": spec, "baseUrl": app.base, "auth": { "type": "bearer", "token": "${EXEC_HOST_TEST_NOTES_TOKEN}" },
                   "include": ["createNote", "getNote"] },
        "reports": { "spec": spec, "baseUrl": app.base, "include": ["usageReport", "whoami"],
                     "auth": { "type": "oauth2", "flow": "clientCredentials", "tokenUrl": format!("{}/token", app.base),
                               "clientId": CLIENT_ID, "clientSecret": CLIENT_SECRET } },
    } });
    std::fs::write(setup.workspace.path().join("apis.json"), config.to_string()).unwrap();
    let script = r#"
        const made = await tools.api__notes__createNote({ body: { title: "milk", tags: ["shop"] } });
        const got = await tools.api__notes__getNote({ note_id: made.id });
        let missing;
        try { await tools.api__notes__getNote({ note_id: 99 }) } catch (e) { missing = e.message }
        const first = await tools.api__reports__usageReport({});
        // Each token is good for one request: the API refuses the second, and the host asks
        // the authorization server for another and sends the call again.
        const second = await tools.api__reports__usageReport({});
        const echoed = await tools.api__reports__whoami({});
        return { made, got, missing, first, second, echoed }"#;
    let output = crate::common::exec_host(setup.workspace.path(), &setup.cache)
        .env("EXEC_HOST_TEST_NOTES_TOKEN", BEARER)
        .args(["run", "--json", "--mcp-config", "apis.json", "-e", script])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}\n{}", stdout(&output), stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let value = &report["value"];
    assert_eq!(value["made"], json!({ "id": 1, "title": "milk", "body": null, "tags": ["shop"] }));
    assert_eq!(value["got"], value["made"]);
    let missing = value["missing"].as_str().unwrap();
    assert!(missing.starts_with("api__notes__getNote: GET /notes/{note_id} answered 404 Not Found"), "{missing}");
    assert_eq!(value["first"], json!({ "notes": 1, "tokens_issued": 1 }));
    assert_eq!(value["second"], json!({ "notes": 1, "tokens_issued": 2 }), "a refused token was renewed once");
    assert_eq!(value["echoed"], json!({ "authorization": "Bearer [credential]" }), "the access token is scrubbed too");
    for secret in [BEARER, CLIENT_SECRET] {
        assert!(!stdout(&output).contains(secret) && !stderr(&output).contains(secret), "{secret} leaked");
    }

    // The declaration file shows the app's own types.
    let dts = crate::common::exec_host(setup.workspace.path(), &setup.cache)
        .env("EXEC_HOST_TEST_NOTES_TOKEN", BEARER)
        .args(["tools", "--dts", "--mcp-config", "apis.json"])
        .output()
        .unwrap();
    assert_eq!(dts.status.code(), Some(0), "{}", stderr(&dts));
    let dts = stdout(&dts);
    assert!(dts.contains("api__notes__createNote") && dts.contains("title: string"), "{dts}");
}

#[test]
fn a_credential_that_expands_to_nothing_is_refused_before_anything_is_sent() {
    let setup = Setup::new();
    let config = json!({ "apis": { "notes": { "spec": "notes.json", "auth": { "type": "bearer", "token": "${EXEC_HOST_TEST_UNSET_TOKEN:-}" } } } });
    std::fs::write(setup.workspace.path().join("apis.json"), config.to_string()).unwrap();
    let output = setup.run(&["run", "--mcp-config", "apis.json", "-e", "return 1"]);
    assert_ne!(output.status.code(), Some(0));
    assert!(stderr(&output).contains("API `notes`: `auth.token` is empty"), "{}", stderr(&output));
}

#[test]
fn a_scripts_fetch_reaches_the_app_only_by_a_rule_and_never_with_an_apis_credential() {
    let app = App::start();
    let setup = Setup::new();
    let config = json!({ "apis": { "notes": { "spec": format!("{}/openapi.json", app.base), "baseUrl": app.base,
                                              "auth": { "type": "bearer", "token": BEARER }, "include": ["whoami"] } } });
    std::fs::write(setup.workspace.path().join("apis.json"), config.to_string()).unwrap();
    std::fs::write(setup.workspace.path().join("web.json"), json!({ "webFetchPrivateHosts": ["127.0.0.1"] }).to_string())
        .unwrap();
    let script = format!(
        r#"
        const through = await tools.api__notes__whoami({{}});
        const own = await (await fetch("{base}/whoami")).json();
        const described = await (await fetch("{base}/openapi.json")).json();
        return {{ through, own, title: described.info.title }}"#,
        base = app.base
    );
    let run = |allow: &[&str]| {
        let mut command = crate::common::exec_host(setup.workspace.path(), &setup.cache);
        command.args(["run", "--json", "--mcp-config", "apis.json", "--settings", "web.json"]);
        for rule in allow {
            command.args(["--allow", rule]);
        }
        command.args(["-e", &script]).output().unwrap()
    };
    let output = run(&["WebFetch(domain:127.0.0.1)"]);
    assert_eq!(output.status.code(), Some(0), "{}\n{}", stdout(&output), stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let value = &report["value"];
    assert_eq!(value["through"], json!({ "authorization": "Bearer [credential]" }), "the API's tool carries its credential");
    assert_eq!(value["own"], json!({ "authorization": "" }), "a script's own request carries none");
    assert!(value["title"].is_string(), "{value}");

    // Without the rule, nothing is sent, even in the command line's bypassPermissions.
    let output = run(&[]);
    let text = format!("{}{}", stdout(&output), stderr(&output));
    assert_ne!(output.status.code(), Some(0), "{text}");
    assert!(text.contains("run with `--allow WebFetch(domain:127.0.0.1)`"), "{text}");
    assert!(!text.contains(BEARER), "the credential leaked: {text}");
}
