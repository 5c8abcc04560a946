//! A script's `fetch`, end to end: each request a call of `WebFetch` through the funnel,
//! against a loopback server of this test that records what reached it. Nothing is
//! reachable without a rule naming the host, whatever the mode; a private address is
//! refused unless the settings name the host, checked on the address connected to (a name
//! that resolves to loopback included) and again at every redirect.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, Request, Response, StatusCode};
use exec_host::settings::{Layer, PermissionMode};
use exec_host::{Approval, CallOutcome, Limits};
use exec_host_tests::{Harness, SharedApprover, TestApprover, within};
use serde_json::{Value, json};

/// What reached the server: each request's method and path, its headers and its body.
type Seen = Arc<Mutex<Vec<(String, HeaderMap, Vec<u8>)>>>;

struct WebServer {
    port: u16,
    seen: Seen,
    _task: tokio::task::JoinHandle<()>,
}

impl WebServer {
    async fn start() -> Self {
        let seen: Seen = Arc::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address: SocketAddr = listener.local_addr().unwrap();
        let kept = seen.clone();
        let port = address.port();
        let app = axum::Router::new().fallback(move |request: Request<Body>| answer(request, kept.clone(), port));
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        WebServer { port, seen, _task: task }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn paths(&self) -> Vec<String> {
        self.seen.lock().unwrap().iter().map(|(line, _, _)| line.clone()).collect()
    }
}

async fn answer(request: Request<Body>, seen: Seen, port: u16) -> Response<Body> {
    let line = format!("{} {}", request.method(), request.uri());
    let headers = request.headers().clone();
    let path = request.uri().path().to_string();
    let method = request.method().clone();
    let body = axum::body::to_bytes(request.into_body(), 1 << 20).await.unwrap().to_vec();
    seen.lock().unwrap().push((line, headers.clone(), body.clone()));
    let redirect =
        |status: u16, to: String| Response::builder().status(status).header("location", to).body(Body::empty()).unwrap();
    match path.as_str() {
        "/pet" => Response::builder()
            .header("content-type", "application/json")
            .header("set-cookie", "session=abc; Path=/")
            .header("x-kind", "cat")
            .body(Body::from(r#"{"name":"Rex","age":3}"#))
            .unwrap(),
        "/echo" => {
            let shown: serde_json::Map<String, Value> =
                headers.iter().map(|(name, value)| (name.to_string(), json!(value.to_str().unwrap_or("?")))).collect();
            let answer = json!({ "method": method.as_str(), "headers": shown, "body": String::from_utf8_lossy(&body) });
            Response::builder().header("content-type", "application/json").body(Body::from(answer.to_string())).unwrap()
        }
        "/bytes" => Response::builder()
            .header("content-type", "application/octet-stream")
            .body(Body::from(vec![0u8, 255, 128, 7]))
            .unwrap(),
        "/missing" => Response::builder().status(StatusCode::NOT_FOUND).body(Body::from("no such thing")).unwrap(),
        "/hop" => redirect(302, "/echo".into()),
        "/see-other" => redirect(303, "/echo".into()),
        "/loop" => redirect(302, "/loop".into()),
        "/to-metadata" => redirect(302, "http://169.254.169.254/latest/meta-data/".into()),
        "/to-localhost" => redirect(307, format!("http://localhost:{port}/echo")),
        "/huge" => {
            // A gigabyte, made as it is read: the reader stops long before.
            let chunks = futures::stream::iter((0..16 * 1024).map(|_| Ok::<_, std::io::Error>(vec![b'x'; 64 * 1024])));
            Response::builder().body(Body::from_stream(chunks)).unwrap()
        }
        "/slow" => {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            Response::builder().body(Body::from("late")).unwrap()
        }
        "/never" => {
            tokio::time::sleep(Duration::from_secs(600)).await;
            Response::builder().body(Body::empty()).unwrap()
        }
        _ => Response::builder().status(StatusCode::NOT_FOUND).body(Body::empty()).unwrap(),
    }
}

/// A harness with managed settings `settings`, in `mode`, asking nobody.
async fn harness(settings: Value, mode: PermissionMode) -> Harness {
    let layer = Layer::from_value(settings).unwrap();
    Harness::with(|builder| builder.managed_settings(layer).permission_mode(mode)).await
}

/// The settings that let scripts reach the test's server on 127.0.0.1, and no other host.
fn allowing_the_server() -> Value {
    json!({ "permissions": { "allow": ["WebFetch(domain:127.0.0.1)"] }, "webFetchPrivateHosts": ["127.0.0.1"] })
}

#[tokio::test]
async fn a_script_fetches_from_a_host_a_rule_allows() {
    let server = WebServer::start().await;
    let harness = harness(allowing_the_server(), PermissionMode::Default).await;
    let script = format!(
        r#"
        const base = {base:?};
        const pet = await fetch(base + "/pet");
        const second = await fetch(new Request(base + "/echo", {{ headers: {{ "X-Trace": "t-1" }} }}));
        const echoed = await second.json();
        const posted = await (await fetch(base + "/echo", {{
          method: "post", headers: new Headers([["content-type", "application/json"], ["authorization", "Bearer mine"]]),
          body: JSON.stringify({{ name: "Tom" }}),
        }})).json();
        const bytes = new Uint8Array(await (await fetch(base + "/bytes")).arrayBuffer());
        const missing = await fetch(base + "/missing");
        const form = await (await fetch(base + "/echo", {{ method: "PUT", body: new URLSearchParams({{ a: "1", b: "x y" }}) }})).json();
        return {{
          status: pet.status, ok: pet.ok, kind: pet.headers.get("X-Kind"), cookies: pet.headers.getSetCookie(),
          pet: await pet.json(), used: pet.bodyUsed, cookieSent: echoed.headers.cookie ?? null, trace: echoed.headers["x-trace"],
          posted, bytes: Array.from(bytes), missing: [missing.status, missing.ok, missing.statusText, await missing.text()],
          form: [form.body, form.headers["content-type"]], type: pet.type, url: pet.url,
        }};"#,
        base = format!("http://127.0.0.1:{}", server.port)
    );
    let outcome = within(30, harness.run(&script)).await;
    assert!(outcome.ok(), "{}", outcome.text());
    let value = outcome.value().unwrap();
    assert_eq!(value["status"], 200);
    assert_eq!(value["ok"], true);
    assert_eq!(value["kind"], "cat");
    assert_eq!(value["cookies"], json!(["session=abc; Path=/"]));
    assert_eq!(value["pet"], json!({ "name": "Rex", "age": 3 }));
    assert_eq!(value["used"], true);
    assert_eq!(value["cookieSent"], Value::Null, "no cookie is kept between requests");
    assert_eq!(value["trace"], "t-1");
    assert_eq!(value["posted"]["method"], "POST", "a standard method is normalised");
    assert_eq!(value["posted"]["body"], r#"{"name":"Tom"}"#);
    assert_eq!(value["posted"]["headers"]["authorization"], "Bearer mine", "the script's own header is sent as given");
    assert_eq!(value["bytes"], json!([0, 255, 128, 7]), "bytes that are not text arrive whole");
    assert_eq!(value["missing"], json!([404, false, "Not Found", "no such thing"]));
    assert_eq!(value["form"], json!(["a=1&b=x+y", "application/x-www-form-urlencoded;charset=UTF-8"]));
    assert_eq!(value["type"], "basic");
    assert_eq!(value["url"], server.url("/pet"));
    // Each request is a call of `WebFetch` in the Exec's record.
    assert_eq!(outcome.client.calls.len(), 6);
    assert!(outcome.client.calls.iter().all(|call| call.name == "WebFetch" && call.outcome == CallOutcome::Succeeded));
}

#[tokio::test]
async fn nothing_is_reachable_without_a_rule_whatever_the_mode() {
    let server = WebServer::start().await;
    let url = server.url("/pet");
    let script = format!("try {{ await fetch({url:?}); return 'fetched' }} catch (e) {{ return e.name + ': ' + e.message }}");
    for mode in [PermissionMode::BypassPermissions, PermissionMode::Default, PermissionMode::DontAsk] {
        let harness = harness(json!({ "webFetchPrivateHosts": ["127.0.0.1"] }), mode).await;
        let outcome = within(30, harness.run(&script)).await;
        let message = outcome.value().unwrap().as_str().unwrap().to_string();
        assert!(message.starts_with("TypeError: fetch("), "{mode:?}: {message}");
        assert!(message.contains("a permissions.allow rule `WebFetch(domain:127.0.0.1)` lets it run"), "{mode:?}: {message}");
    }
    // A deny rule outranks an allow rule; a rule for another host does not apply.
    let denied = json!({ "permissions": { "allow": ["WebFetch(domain:127.0.0.1)"], "deny": ["WebFetch(domain:127.0.0.1)"] },
                         "webFetchPrivateHosts": ["127.0.0.1"] });
    let outcome = within(30, harness(denied, PermissionMode::BypassPermissions).await.run(&script)).await;
    assert!(outcome.text().contains("is denied by the permissions.deny rule `WebFetch(domain:127.0.0.1)`"), "{}", outcome.text());
    let elsewhere = json!({ "permissions": { "allow": ["WebFetch(domain:*.example.com)", "WebFetch(domain:127.0.0.2)"] },
                            "webFetchPrivateHosts": ["127.0.0.1"] });
    let outcome = within(30, harness(elsewhere, PermissionMode::BypassPermissions).await.run(&script)).await;
    assert!(outcome.text().contains("lets it run"), "{}", outcome.text());
    assert!(server.paths().is_empty(), "nothing reached the server: {:?}", server.paths());

    // A person allows it: once, then always (the host alone, for this session).
    let approver = TestApprover::new(|_| Approval::AllowAlways);
    let layer = Layer::from_value(json!({ "webFetchPrivateHosts": ["127.0.0.1"] })).unwrap();
    let shared = Arc::new(SharedApprover(approver.clone()));
    let asked =
        Harness::with(|builder| builder.managed_settings(layer).approver(shared).permission_mode(PermissionMode::Default)).await;
    let twice = format!("await fetch({url:?}); await fetch({url:?}); return 'both'");
    let outcome = within(30, asked.run(&twice)).await;
    assert_eq!(outcome.value(), Some(&json!("both")), "{}", outcome.text());
    assert_eq!(approver.tools(), vec!["WebFetch".to_string()], "asked once, then the host was allowed always");

    // A person who takes long to answer: the script's abort stops the wait, and nothing is sent.
    let approver = TestApprover::slow(Duration::from_secs(600), |_| Approval::AllowOnce);
    let layer = Layer::from_value(json!({ "webFetchPrivateHosts": ["127.0.0.1"] })).unwrap();
    let shared = Arc::new(SharedApprover(approver.clone()));
    let slow =
        Harness::with(|builder| builder.managed_settings(layer).approver(shared).permission_mode(PermissionMode::Default)).await;
    let aborted = format!(
        "try {{ await fetch({url:?}, {{ signal: AbortSignal.timeout(200) }}) }} catch (e) {{ \
           await new Promise((done) => setTimeout(done, 300)); return e.name }}"
    );
    let outcome = within(30, slow.run(&aborted)).await;
    assert_eq!(outcome.value(), Some(&json!("TimeoutError")), "{}", outcome.text());
    // The wait for the person ended with the abort: the call finished, cancelled, while the
    // script went on.
    let call = &outcome.client.calls[0];
    assert!(matches!(&call.outcome, CallOutcome::Failed { message, .. } if message.contains("was cancelled")), "{call:?}");
    assert_eq!(server.paths().len(), 2, "only the two requests allowed before: {:?}", server.paths());
}

#[tokio::test]
async fn hooks_see_each_request_as_a_call_of_web_fetch() {
    let server = WebServer::start().await;
    let kept = tempfile::tempdir().unwrap();
    let file = kept.path().join("seen.json");
    let mut settings = allowing_the_server();
    settings["hooks"] = json!({ "PreToolUse": [{ "matcher": "WebFetch", "hooks": [{ "type": "command", "command": format!("cat > {}", file.display()) }] }] });
    let harness = harness(settings, PermissionMode::Default).await;
    let outcome = within(30, harness.run(&format!("return (await fetch({:?})).status", server.url("/pet")))).await;
    assert_eq!(outcome.value(), Some(&json!(200)), "{}", outcome.text());
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(input["tool_name"], "WebFetch");
    assert_eq!(input["tool_input"]["url"], server.url("/pet"));
    assert_eq!(input["tool_input"]["method"], "GET");
}

#[tokio::test]
async fn private_addresses_are_refused_unless_the_settings_name_the_host() {
    let server = WebServer::start().await;
    let port = server.port;
    let rules = json!([
        "WebFetch(domain:127.0.0.1)",
        "WebFetch(domain:localhost)",
        "WebFetch(domain:[::ffff:7f00:1])",
        "WebFetch(domain:169.254.169.254)",
        "WebFetch(domain:[::1])"
    ]);
    let script = format!(
        r#"
        const out = [];
        for (const url of ["http://127.0.0.1:{port}/pet", "http://localhost:{port}/pet", "http://2130706433:{port}/pet",
                           "http://[::ffff:127.0.0.1]:{port}/pet", "http://169.254.169.254/latest/meta-data/", "http://[::1]:{port}/pet"]) {{
          try {{ out.push((await fetch(url)).status) }} catch (e) {{ out.push(e.message) }}
        }}
        return out"#
    );
    let closed = harness(json!({ "permissions": { "allow": rules } }), PermissionMode::Default).await;
    let outcome = within(60, closed.run(&script)).await;
    let results = outcome.value().unwrap().as_array().unwrap().clone();
    let text = |i: usize| results[i].as_str().unwrap_or_default().to_string();
    assert!(text(0).contains("`127.0.0.1` is a loopback address, which fetch does not reach unless the setting webFetchPrivateHosts names `127.0.0.1`"), "{}", text(0));
    // A name that resolves to loopback: refused on the address it resolves to.
    assert!(text(1).contains("`localhost` resolves to") && text(1).contains("a loopback address"), "{}", text(1));
    // The URL parser reads a number as the address it is; an IPv4-mapped address is its IPv4 one.
    assert!(text(2).contains("`127.0.0.1` is a loopback address"), "{}", text(2));
    assert!(text(3).contains("a loopback address"), "{}", text(3));
    assert!(text(4).contains("`169.254.169.254` is a link-local address"), "{}", text(4));
    assert!(text(5).contains("`[::1]` is a loopback address"), "{}", text(5));
    assert!(server.paths().is_empty(), "nothing reached the server: {:?}", server.paths());

    // Named, the host is reached; a name for the same address is not the same host.
    let open =
        harness(json!({ "permissions": { "allow": rules }, "webFetchPrivateHosts": ["127.0.0.1"] }), PermissionMode::Default)
            .await;
    let outcome = within(60, open.run(&script)).await;
    let results = outcome.value().unwrap().as_array().unwrap().clone();
    assert_eq!(results[0], 200);
    assert!(results[1].as_str().unwrap().contains("`localhost` resolves to"), "{results:?}");
    assert_eq!(results[2], 200, "the URL parser made it 127.0.0.1");
    assert_eq!(server.paths(), vec!["GET /pet".to_string(), "GET /pet".to_string()]);
}

#[tokio::test]
async fn redirects_are_followed_by_the_script_each_hop_checked_again() {
    let server = WebServer::start().await;
    let mut settings = allowing_the_server();
    settings["permissions"]["allow"] = json!(["WebFetch(domain:127.0.0.1)", "WebFetch(domain:169.254.169.254)"]);
    let harness = harness(settings, PermissionMode::Default).await;
    let base = format!("http://127.0.0.1:{}", server.port);
    let script = format!(
        r#"
        const base = {base:?};
        const hop = await fetch(base + "/hop", {{ headers: {{ authorization: "Bearer mine" }} }});
        const hopped = await hop.json();
        const other = await (await fetch(base + "/see-other", {{ method: "POST", body: "gone" }})).json();
        const manual = await fetch(base + "/hop", {{ redirect: "manual" }});
        const errors = [];
        for (const [path, init] of [["/to-metadata", {{}}], ["/loop", {{}}], ["/hop", {{ redirect: "error" }}], ["/to-localhost", {{}}]]) {{
          try {{ await fetch(base + path, init); errors.push("fetched") }} catch (e) {{ errors.push(e.message) }}
        }}
        return {{ redirected: hop.redirected, url: hop.url, auth: hopped.headers.authorization, other: [other.method, other.body],
                  manual: [manual.status, manual.headers.get("location")], errors }};"#
    );
    let outcome = within(60, harness.run(&script)).await;
    assert!(outcome.ok(), "{}", outcome.text());
    let value = outcome.value().unwrap();
    assert_eq!(value["redirected"], true);
    assert_eq!(value["url"], server.url("/echo"));
    assert_eq!(value["auth"], "Bearer mine", "the same origin keeps the script's header");
    assert_eq!(value["other"], json!(["GET", ""]), "303 turns a POST into a GET without its body");
    assert_eq!(value["manual"], json!([302, "/echo"]));
    let errors: Vec<&str> = value["errors"].as_array().unwrap().iter().map(|e| e.as_str().unwrap()).collect();
    assert!(errors[0].contains("`169.254.169.254` is a link-local address"), "{}", errors[0]);
    assert!(errors[1].contains("more than 20 redirects"), "{}", errors[1]);
    assert!(errors[2].contains("the request's redirect mode is \"error\""), "{}", errors[2]);
    // Another host is a call of its own: no rule names `localhost`, so it is not reached.
    assert!(errors[3].contains("a permissions.allow rule `WebFetch(domain:localhost)` lets it run"), "{}", errors[3]);
    assert!(!server.paths().iter().any(|p| p.contains("meta-data")));
}

#[tokio::test]
async fn answers_are_bounded_aborts_stop_the_request_and_the_wait_costs_no_budget() {
    let server = WebServer::start().await;
    let layer = Layer::from_value(allowing_the_server()).unwrap();
    let limits = Limits::default().with_budget(Duration::from_millis(800));
    let harness = Harness::with(|builder| builder.managed_settings(layer).limits(limits)).await;
    let script = format!(
        r#"
        const out = [];
        try {{ await fetch({huge:?}); out.push("read it all") }} catch (e) {{ out.push(e.message) }}
        const started = Date.now();
        try {{ await fetch({never:?}, {{ signal: AbortSignal.timeout(300) }}); out.push("answered") }} catch (e) {{ out.push(e.name) }}
        out.push(Date.now() - started < 5000);
        const controller = new AbortController();
        const pending = fetch({never:?}, {{ signal: controller.signal }});
        setTimeout(() => controller.abort(), 50);
        try {{ await pending; out.push("answered") }} catch (e) {{ out.push(e.name) }}
        try {{ await fetch({never:?}, {{ signal: AbortSignal.abort() }}) }} catch (e) {{ out.push(e.name) }}
        out.push(await (await fetch({slow:?})).text());
        return out"#,
        huge = server.url("/huge"),
        never = server.url("/never"),
        slow = server.url("/slow"),
    );
    let outcome = within(60, harness.run(&script)).await;
    assert!(outcome.ok(), "{}", outcome.text());
    let value = outcome.value().unwrap();
    assert!(value[0].as_str().unwrap().contains("the answer is larger than 10485760 bytes; no more was read"), "{value}");
    assert_eq!(value[1], "TimeoutError");
    assert_eq!(value[2], true);
    assert_eq!(value[3], "AbortError");
    assert_eq!(value[4], "AbortError");
    assert_eq!(value[5], "late", "a 1.5 s wait within a 0.8 s budget: the wait is not the script's");
    // The aborted calls were stopped in the host, and recorded so.
    let calls = &outcome.client.calls;
    let stopped = calls
        .iter()
        .filter(|call| matches!(&call.outcome, CallOutcome::Failed { message, .. } if message.contains("was cancelled")))
        .count();
    assert_eq!(stopped, 2, "{calls:?}");
    assert_eq!(calls.len(), 4, "an aborted signal sends nothing: {calls:?}");
}

#[tokio::test]
async fn an_exec_that_aborted_a_request_parks_and_resumes_with_no_request_sent_twice() {
    use exec_host::state::{DirectoryStore, SealedStore, StateKey, StateStore};
    use exec_host::{CallOptions, CancellationToken};

    let server = WebServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn StateStore> = Arc::new(DirectoryStore::open(&dir.path().join("state")).unwrap());
    let store = SealedStore::new(store, StateKey::generate().unwrap());
    // `count` asks, and so does a request to `localhost`: both park, each in its round.
    let settings = json!({ "permissions": { "allow": ["WebFetch(domain:127.0.0.1)"], "ask": ["count"] },
                           "webFetchPrivateHosts": ["127.0.0.1", "localhost"] });
    let session = |counter: exec_host_tests::Counter| {
        let (store, settings, dir) = (store.clone(), Layer::from_value(settings.clone()).unwrap(), dir.path().to_path_buf());
        async move {
            let approver = Arc::new(SharedApprover(TestApprover::new(|_| Approval::Park)));
            Harness::builder(&dir, &counter)
                .await
                .managed_settings(settings)
                .approver(approver)
                .state_store(store)
                .conversation("fetch-1")
                .build()
                .await
                .unwrap()
        }
    };
    let counter = exec_host_tests::Counter::default();
    let first = session(counter.clone()).await;
    let code = format!(
        r#"
        const controller = new AbortController();
        const pending = fetch({never:?}, {{ signal: controller.signal }});
        setTimeout(() => controller.abort(), 30);
        let aborted;
        try {{ await pending }} catch (e) {{ aborted = e.name }}
        const n = await tools.count({{}});
        const pet = await (await fetch("http://localhost:{port}/pet")).json();
        return {{ aborted, n, pet }}"#,
        never = server.url("/never"),
        port = server.port
    );
    let parked = first.call(exec_host_tests::exec_call(&code), CancellationToken::new()).await.parked.expect("count parks");
    assert_eq!(parked.approvals[0].tool, "count");
    let resume = |session: exec_host::Session, handle: String, id: u32| async move {
        let answers = std::collections::HashMap::from([(id, Approval::AllowOnce)]);
        session.resume(&handle, answers, CallOptions::new(CancellationToken::new())).await.unwrap()
    };
    // Another session, as another process: the replay stops the aborted request again
    // without sending it, and the request to `localhost` asks in its turn.
    let again = resume(session(counter.clone()).await, parked.handle.clone(), parked.approvals[0].id).await;
    let parked = again.parked.expect("the request to localhost parks");
    assert_eq!(parked.approvals[0].tool, "WebFetch");
    assert_eq!(parked.approvals[0].input["url"], format!("http://localhost:{}/pet", server.port));
    let done = resume(session(counter.clone()).await, parked.handle.clone(), parked.approvals[0].id).await;
    assert!(done.client.ok, "{}", done.model.text);
    assert_eq!(done.client.value, Some(json!({ "aborted": "AbortError", "n": 1, "pet": { "name": "Rex", "age": 3 } })));
    assert_eq!(counter.get(), 1, "count ran once");
    assert_eq!(server.paths(), vec!["GET /never".to_string(), "GET /pet".to_string()], "each request was sent once");
    // The first call of the Exec (id 0) was stopped when its signal aborted, not left to time out.
    let first_call = &done.client.calls[0];
    assert!(
        matches!(&first_call.outcome, CallOutcome::Failed { message, .. } if message.contains("was cancelled"))
            && first_call.duration < Duration::from_secs(5),
        "{first_call:?}"
    );
}
