//! HTTP APIs from the command line: a FastAPI app (tests/python/api_app.py, pinned with the
//! MCP Python SDK's venv) described by its own /openapi.json (OpenAPI 3.1) fetched by URL,
//! one API of it behind a bearer token from the environment, one behind OAuth 2.1's client
//! credentials and one a person signs in to (OAuth 2.1's authorization code grant with PKCE,
//! through `exec-host mcp login`), every credential kept in the host.

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
        App::with_person_tokens_lasting(3600)
    }

    /// The app, its authorization code grant's access tokens lasting `seconds`.
    fn with_person_tokens_lasting(seconds: u32) -> Self {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut child = Command::new(python_sdk())
            .arg(root.join("tests/python/api_app.py"))
            .args([BEARER, CLIENT_ID, CLIENT_SECRET, &seconds.to_string()])
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

#[test]
fn an_api_a_person_signs_in_to_is_logged_in_once_and_its_tokens_refreshed_in_the_host() {
    // Access tokens last 4 s: the host refreshes one that is about to expire.
    let app = App::with_person_tokens_lasting(4);
    let setup = Setup::new();
    let config = json!({ "apis": { "notes": {
        "spec": format!("{}/openapi.json", app.base), "baseUrl": app.base, "include": ["myProfile", "revokeAccessTokens"],
        "auth": { "type": "oauth2", "flow": "authorizationCode", "authorizationUrl": format!("{}/authorize", app.base),
                  "tokenUrl": format!("{}/token", app.base), "clientId": "notes-cli", "scopes": ["profile"] } } } });
    std::fs::write(setup.workspace.path().join("apis.json"), config.to_string()).unwrap();
    // Outside the workspace, where the host keeps tokens.
    let private = tempfile::tempdir().unwrap();
    let credentials = private.path().join("credentials.json");
    let credentials = credentials.to_str().unwrap();
    let with = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--mcp-config", "apis.json", "--mcp-credentials", credentials]);
        all.into_iter().map(str::to_string).collect::<Vec<_>>()
    };
    let run = |args: &[&str]| {
        let args = with(args);
        setup.run(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let script = r#"
        const first = await tools.api__notes__myProfile({});
        // The token is about to expire: the next call goes with a refreshed one.
        await new Promise(resolve => setTimeout(resolve, 3500));
        const second = await tools.api__notes__myProfile({});
        // The API revokes every access token: it refuses the next, and the host refreshes.
        await tools.api__notes__revokeAccessTokens({});
        const third = await tools.api__notes__myProfile({});
        return { first, second, third }"#;

    // Not signed in: the call fails saying how to sign in, and nothing is sent anywhere.
    let output = run(&["run", "-e", "return await tools.api__notes__myProfile({})"]);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert_ne!(output.status.code(), Some(0), "{said}");
    assert!(said.contains("API `notes` needs an OAuth sign-in") && said.contains("run `exec-host mcp login notes`"), "{said}");
    let listed = run(&["mcp", "list", "--json"]);
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    let line: Value = serde_json::from_str(stdout(&listed).trim()).unwrap();
    assert_eq!(
        line,
        json!({ "name": "notes", "api": format!("{}/openapi.json", app.base), "operations": 2, "signIn": "not signed in" })
    );

    let args = with(&["mcp", "login", "notes"]);
    let login = crate::common::exec_host(setup.workspace.path(), &setup.cache)
        .args(&args)
        .env("BROWSER", crate::mcp::follow_redirect(""))
        .output()
        .unwrap();
    assert_eq!(login.status.code(), Some(0), "{}", stderr(&login));
    assert!(stderr(&login).contains("to sign in to API `notes`, open this URL"), "{}", stderr(&login));
    assert!(stderr(&login).contains("signed in to API `notes`; its tokens are kept in"), "{}", stderr(&login));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(credentials).unwrap().permissions().mode() & 0o777, 0o600);
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(credentials).unwrap()).unwrap();
    let entry = &kept["apis"]["notes"];
    assert_eq!(entry["resource"], app.base.as_str(), "bound to the API's base URL: {kept}");
    let response = &entry["credentials"]["token_response"];
    let secrets =
        [response["access_token"].as_str().unwrap().to_string(), response["refresh_token"].as_str().unwrap().to_string()];
    let listed = run(&["mcp", "list", "--json"]);
    assert!(stdout(&listed).contains(r#""signIn":"signed in""#), "{}", stdout(&listed));

    let output = run(&["run", "--json", "-e", script]);
    assert_eq!(output.status.code(), Some(0), "{}\n{}", stdout(&output), stderr(&output));
    let value = serde_json::from_str::<Value>(&stdout(&output)).unwrap()["value"].clone();
    assert_eq!(value["first"]["user"], "ada", "{value}");
    assert_eq!(value["first"]["grants"], json!({ "authorization_code": 1, "refresh_token": 0 }), "the login's token: {value}");
    assert_eq!(
        value["second"]["grants"],
        json!({ "authorization_code": 1, "refresh_token": 1 }),
        "refreshed before expiry: {value}"
    );
    assert_eq!(
        value["third"]["grants"],
        json!({ "authorization_code": 1, "refresh_token": 2 }),
        "refreshed once refused: {value}"
    );
    let serials: Vec<&Value> = ["first", "second", "third"].iter().map(|call| &value[call]["token_serial"]).collect();
    assert!(serials[0] != serials[1] && serials[1] != serials[2], "each call went with a new token: {value}");
    for text in [stdout(&output), stderr(&output), stdout(&login), stderr(&login)] {
        for secret in &secrets {
            assert!(!text.contains(secret.as_str()), "a token was printed: {text}");
        }
    }
    // The rotated refresh token was kept: a later run needs no sign-in either.
    let output = run(&["run", "--json", "-e", "return await tools.api__notes__myProfile({})"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    let output = run(&["mcp", "logout", "notes"]);
    assert!(stderr(&output).contains("signed out of API `notes`"), "{}", stderr(&output));
    let output = run(&["run", "-e", "return await tools.api__notes__myProfile({})"]);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert!(said.contains("run `exec-host mcp login notes`"), "{said}");
}
