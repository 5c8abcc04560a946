//! HTTP APIs described by OpenAPI as tool sources, end to end: a description in YAML with
//! shared and recursive schemas, served by a loopback server of this test, called from
//! scripts through the real guest and host. The server records what reached it, so the
//! tests see the credential arrive while no script, result or error ever holds it.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, Request, Response, StatusCode};
use exec_host::mcp::McpConfig;
use exec_host::openapi::{ApiAuth, ApiConfig, ApiLimits, SpecPlace};
use exec_host::{Effect, Stage};
use exec_host_tests::{Harness, within};
use serde_json::{Value, json};

const TOKEN: &str = "tok-5ecret-4f9a";
/// The access token a person's sign-in gets.
const PERSON_TOKEN: &str = "person-tok-77c1d0";
/// The PKCE challenge of the last authorization URL opened.
static CHALLENGE: Mutex<Option<String>> = Mutex::new(None);

const SPEC: &str = r##"
openapi: 3.0.3
info: { title: Pets, version: "1" }
paths:
  /pets/{petId}:
    parameters:
      - { name: petId, in: path, required: true, schema: { type: string }, description: The pet's id. }
    get:
      operationId: pets/get-one
      summary: Get a pet by its id
      tags: [pets]
      parameters:
        - { name: X-Trace, in: header, schema: { type: string } }
      responses:
        200:
          description: the pet
          content: { application/json: { schema: { $ref: "#/components/schemas/Pet" } } }
        404: { description: no such pet }
  /pets:
    post:
      operationId: createPet
      summary: Add a pet
      requestBody:
        required: true
        content: { application/json: { schema: { $ref: "#/components/schemas/Pet" } } }
      responses:
        201: { description: made, content: { application/json: { schema: { $ref: "#/components/schemas/Pet" } } } }
  /big: { get: { operationId: big, responses: { 200: { description: a lot } } } }
  /slow: { get: { operationId: slow, responses: { 200: { description: never } } } }
  /away: { get: { operationId: away, responses: { 200: { description: elsewhere } } } }
  /loop: { get: { operationId: loop, responses: { 200: { description: round } } } }
  /echo: { get: { operationId: echo, responses: { 200: { description: what arrived, content: { text/plain: {} } } } } }
  /hold: { get: { operationId: hold, responses: { 200: { description: after a while } } } }
components:
  schemas:
    Pet:
      type: object
      required: [name]
      properties:
        name: { type: string }
        tag: { type: string, nullable: true }
        parent: { $ref: "#/components/schemas/Pet" }
"##;

/// What reached the server: each request's method, path and query, and its headers.
type Seen = Arc<Mutex<Vec<(String, HeaderMap)>>>;

/// Requests of `/hold` in flight now, and the most there ever were.
static HOLDING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static MOST_HELD: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

struct PetServer {
    base: String,
    seen: Seen,
    _task: tokio::task::JoinHandle<()>,
}

impl PetServer {
    async fn start() -> Self {
        let seen: Seen = Arc::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address: SocketAddr = listener.local_addr().unwrap();
        let kept = seen.clone();
        let app = axum::Router::new().fallback(move |request: Request<Body>| answer(request, kept.clone()));
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        PetServer { base: format!("http://{address}"), seen, _task: task }
    }

    fn requests(&self) -> Vec<String> {
        self.seen.lock().unwrap().iter().map(|(line, _)| line.clone()).collect()
    }
}

async fn answer(request: Request<Body>, seen: Seen) -> Response<Body> {
    let line = format!("{} {}", request.method(), request.uri());
    let headers = request.headers().clone();
    seen.lock().unwrap().push((line, headers.clone()));
    let json = |status: StatusCode, value: Value| {
        Response::builder().status(status).header("content-type", "application/json").body(Body::from(value.to_string())).unwrap()
    };
    let path = request.uri().path().to_string();
    match (request.method().as_str(), path.as_str()) {
        ("GET", "/pets/rex") => json(
            StatusCode::OK,
            // An API that quotes the credential back (a debugging echo): the host scrubs it.
            json!({ "name": "Rex", "tag": null, "auth": headers.get("authorization").map(|v| v.to_str().unwrap().to_string()) }),
        ),
        ("GET", p) if p.starts_with("/pets/") => json(StatusCode::NOT_FOUND, json!({ "message": format!("no pet at {p}") })),
        ("POST", "/pets") => {
            let body = axum::body::to_bytes(request.into_body(), 1 << 20).await.unwrap();
            let pet: Value = serde_json::from_slice(&body).unwrap();
            json(StatusCode::CREATED, pet)
        }
        ("GET", "/big") => {
            let chunks = futures::stream::iter((0..64).map(|_| Ok::<_, std::io::Error>(vec![b'x'; 64 * 1024])));
            Response::builder().header("content-type", "text/plain").body(Body::from_stream(chunks)).unwrap()
        }
        ("GET", "/slow") => {
            tokio::time::sleep(Duration::from_secs(600)).await;
            json(StatusCode::OK, json!({}))
        }
        ("GET", "/away") => Response::builder()
            .status(302)
            .header("location", "http://169.254.169.254/latest/meta-data/")
            .body(Body::empty())
            .unwrap(),
        ("GET", "/loop") => Response::builder().status(302).header("location", "/loop").body(Body::empty()).unwrap(),
        ("GET", "/hold") => {
            use std::sync::atomic::Ordering;
            let now = HOLDING.fetch_add(1, Ordering::SeqCst) + 1;
            MOST_HELD.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(150)).await;
            HOLDING.fetch_sub(1, Ordering::SeqCst);
            json(StatusCode::OK, json!({ "held": true }))
        }
        // The token endpoint of a person's sign-in: the code the sign-in was given, with the
        // PKCE verifier of the challenge the authorization URL carried.
        ("POST", "/token") => {
            let body = axum::body::to_bytes(request.into_body(), 1 << 20).await.unwrap();
            let form: BTreeMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
            let verifier = form.get("code_verifier").cloned().unwrap_or_default();
            let challenge = {
                use base64::Engine;
                use sha2::Digest;
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()))
            };
            let expected = CHALLENGE.lock().unwrap().clone();
            if form.get("grant_type").map(String::as_str) != Some("authorization_code")
                || form.get("code").map(String::as_str) != Some("the-code")
                || Some(challenge) != expected
            {
                return json(StatusCode::BAD_REQUEST, json!({ "error": "invalid_grant" }));
            }
            json(StatusCode::OK, json!({ "access_token": PERSON_TOKEN, "token_type": "Bearer", "expires_in": 3600 }))
        }
        ("GET", "/echo") => {
            Response::builder().header("content-type", "text/plain").body(Body::from(format!("{headers:?}"))).unwrap()
        }
        _ => json(StatusCode::NOT_FOUND, json!({})),
    }
}

/// A session with the pet API, its description written to the workspace's parent.
async fn harness(server: &PetServer, limits: ApiLimits) -> (Harness, tempfile::TempDir) {
    let spec_dir = tempfile::tempdir().unwrap();
    let spec = spec_dir.path().join("pets.yaml");
    std::fs::write(&spec, SPEC).unwrap();
    let api = ApiConfig::new(SpecPlace::File(spec))
        .with_base_url(server.base.clone())
        .with_auth(ApiAuth::Bearer { token: TOKEN.into() })
        .with_limits(limits);
    let mut config = McpConfig::default();
    config.apis = BTreeMap::from([("pets".to_string(), api)]);
    (Harness::with(|builder| builder.mcp_servers(config)).await, spec_dir)
}

fn small_limits() -> ApiLimits {
    let mut limits = ApiLimits::default();
    limits.response_bytes = 1024 * 1024;
    limits.timeout = Duration::from_secs(2);
    limits
}

#[tokio::test]
async fn a_script_calls_operations_by_name_with_the_credential_added_by_the_host() {
    let server = PetServer::start().await;
    let (harness, _spec) = harness(&server, ApiLimits::default()).await;
    let tool = harness.available().into_iter().find(|t| t.name == "api__pets__pets_get_one").expect("the operation is a tool");
    assert_eq!(tool.effect, Effect::ReadOnly, "GET only reads");
    assert!(tool.defer, "an API's tools wait in the pool");
    assert_eq!(tool.output_schema.as_ref().unwrap()["properties"]["parent"], json!({}), "a recursive schema ends");
    assert_eq!(tool.input_schema["required"], json!(["petId"]));
    let outcome = within(
        30,
        harness.run(
            r#"
            const pet = await tools.api__pets__pets_get_one({ petId: "rex", "X-Trace": "t-1" });
            const made = await tools.api__pets__createPet({ body: { name: "Tom", tag: "cat" } });
            return { pet, made }"#,
        ),
    )
    .await;
    assert!(outcome.ok(), "{}", outcome.text());
    assert_eq!(
        outcome.value().unwrap(),
        &json!({ "pet": { "name": "Rex", "tag": null, "auth": "Bearer [credential]" }, "made": { "name": "Tom", "tag": "cat" } })
    );
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(seen[0].0, "GET /pets/rex");
    assert_eq!(seen[0].1["authorization"], format!("Bearer {TOKEN}"), "the credential reached the API");
    assert_eq!(seen[0].1["x-trace"], "t-1");
    assert_eq!(seen[1].0, "POST /pets");
    assert_eq!(seen[1].1["content-type"], "application/json");
    assert!(!outcome.text().contains(TOKEN) && !format!("{:?}", outcome.client).contains(TOKEN));
}

#[tokio::test]
async fn failures_say_what_happened_and_never_hold_the_credential() {
    let server = PetServer::start().await;
    let (harness, _spec) = harness(&server, small_limits()).await;
    let outcome = within(
        60,
        harness.run(
            r#"
            const messages = [];
            for (const call of [
              () => tools.api__pets__pets_get_one({ petId: "ghost" }),
              () => tools.api__pets__big({}),
              () => tools.api__pets__slow({}),
              () => tools.api__pets__away({}),
              () => tools.api__pets__loop({}),
              () => tools.api__pets__pets_get_one({ petId: "rex", "X-Trace": "a\r\nX-Admin: 1" }),
              () => tools.api__pets__pets_get_one({ petId: ".." }),
              () => tools.api__pets__pets_get_one({ petId: "rex", token: "mine" }),
            ]) {
              try { await call(); messages.push("no error"); } catch (e) { messages.push(e.message); }
            }
            return { messages, echo: await tools.api__pets__echo({}) }"#,
        ),
    )
    .await;
    assert!(outcome.ok(), "{}", outcome.text());
    let value = outcome.value().unwrap();
    let messages: Vec<&str> = value["messages"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
    assert_eq!(
        messages[0],
        r#"api__pets__pets_get_one: GET /pets/{petId} answered 404 Not Found: {"message":"no pet at /pets/ghost"}"#
    );
    assert!(messages[1].contains("the answer is larger than 1048576 bytes"), "{}", messages[1]);
    assert!(messages[2].contains("no whole answer within 2s"), "{}", messages[2]);
    assert!(messages[3].contains("a redirect to another origin, which is not followed"), "{}", messages[3]);
    assert!(messages[4].contains("more than 5 redirects"), "{}", messages[4]);
    assert!(messages[5].contains("may not contain line breaks"), "{}", messages[5]);
    assert!(messages[6].contains("one segment of the path"), "{}", messages[6]);
    assert!(messages[7].contains("has no parameter `token`"), "{}", messages[7]);
    let echo = value["echo"].as_str().unwrap();
    assert!(echo.contains("[credential]") && !echo.contains(TOKEN), "{echo}");
    assert!(!outcome.text().contains(TOKEN));
    let requests = server.requests();
    assert!(!requests.iter().any(|r| r.contains("X-Admin") || r.contains("..")), "refused calls sent nothing: {requests:?}");
    assert!(!requests.iter().any(|r| r.contains("169.254")), "{requests:?}");

    let flat = Harness::with(|builder| builder.mcp_servers(pets_config(&server, &_spec)).managed_settings(flat_settings())).await;
    let direct = flat.call("api__pets__pets_get_one", json!({ "petId": "ghost" })).await;
    assert_eq!(direct.failure().unwrap().stage, Stage::Execution);
    let refused = flat.call("api__pets__pets_get_one", json!({ "petId": "" })).await;
    assert_eq!(refused.failure().unwrap().stage, Stage::Params);
}

#[tokio::test]
async fn an_apis_requests_in_flight_are_bounded_and_more_wait_for_room() {
    let server = PetServer::start().await;
    let mut limits = ApiLimits::default();
    limits.concurrent = 2;
    let (harness, _spec) = harness(&server, limits).await;
    let outcome = within(
        30,
        harness
            .run("const all = await Promise.all(Array.from({ length: 6 }, () => tools.api__pets__hold({}))); return all.length"),
    )
    .await;
    assert!(outcome.ok(), "{}", outcome.text());
    assert_eq!(outcome.value().unwrap(), &json!(6), "every call got its answer");
    let most = MOST_HELD.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(most, 2, "at most maxConcurrent requests reached the API at once");
}

fn pets_config(server: &PetServer, spec_dir: &tempfile::TempDir) -> McpConfig {
    let api = ApiConfig::new(SpecPlace::File(spec_dir.path().join("pets.yaml")))
        .with_base_url(server.base.clone())
        .with_auth(ApiAuth::Bearer { token: TOKEN.into() });
    let mut config = McpConfig::default();
    config.apis = BTreeMap::from([("pets".to_string(), api)]);
    config
}

fn flat_settings() -> exec_host::settings::Layer {
    exec_host::settings::Layer::from_value(json!({ "enableExec": false })).unwrap()
}

#[tokio::test]
async fn rules_name_operations_as_they_name_server_tools() {
    let server = PetServer::start().await;
    let spec = tempfile::tempdir().unwrap();
    std::fs::write(spec.path().join("pets.yaml"), SPEC).unwrap();
    let deny = exec_host::settings::Layer::from_value(json!({ "permissions": { "deny": ["api__pets__create*"] } })).unwrap();
    let harness = Harness::with(|builder| builder.mcp_servers(pets_config(&server, &spec)).managed_settings(deny)).await;
    let outcome = harness
        .run(
            r#"
            const pet = await tools.api__pets__pets_get_one({ petId: "rex" });
            try { await tools.api__pets__createPet({ body: { name: "Tom" } }); return "made" } catch (e) { return [pet.name, e.message] }"#,
        )
        .await;
    assert!(outcome.ok(), "{}", outcome.text());
    let value = outcome.value().unwrap();
    assert_eq!(value[0], "Rex");
    // A tool every call of which a rule denies is out of the script's reach, as a server's is.
    assert!(value[1].as_str().unwrap().contains("`api__pets__createPet` is not a tool this script can reach"), "{value}");
    assert!(!server.requests().iter().any(|r| r.starts_with("POST")), "a denied call sends nothing");
}

#[tokio::test]
async fn a_description_that_cannot_be_read_stops_the_session_with_why() {
    let spec = tempfile::tempdir().unwrap();
    let file = spec.path().join("broken.yaml");
    std::fs::write(&file, "openapi: 3.0.0\npaths: {a: [\n").unwrap();
    let mut config = McpConfig::default();
    config.apis =
        BTreeMap::from([("broken".to_string(), ApiConfig::new(SpecPlace::File(file)).with_base_url("https://x.example"))]);
    let dir = tempfile::tempdir().unwrap();
    let Err(error) = exec_host::Session::builder().workspace(dir.path()).mcp_servers(config).build().await else {
        panic!("a session with a broken description started");
    };
    let text = error.to_string();
    assert!(text.starts_with("API `broken`: ") && text.contains("not valid YAML"), "{text}");
}

/// Prism serving GitHub's published description on loopback: a mock that answers each
/// operation from the description's examples and validates every request against it.
struct Prism {
    _child: tokio::process::Child,
    base: String,
}

impl Prism {
    async fn start(spec: &std::path::Path) -> Self {
        use tokio::io::AsyncBufReadExt;
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let prism = crate::mcp::published("@stoplight/prism-cli/dist/index.js");
        let mut child = tokio::process::Command::new("node")
            .arg(prism)
            .args(["mock", "--host", "127.0.0.1", "--port", &port.to_string()])
            .arg(spec)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("Prism starts");
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let listening = async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if line.contains("Prism is listening") {
                    return;
                }
            }
            panic!("Prism ended before it listened");
        };
        within(120, listening).await;
        // Its log goes on: keep reading it so that Prism never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Prism { _child: child, base: format!("http://127.0.0.1:{port}") }
    }
}

#[tokio::test]
async fn scripts_drive_githubs_published_description_through_prism() {
    let spec = crate::mcp::published("@octokit/openapi/generated/api.github.com.json");
    let prism = Prism::start(&spec).await;
    let api = ApiConfig::new(SpecPlace::File(spec))
        .with_base_url(prism.base.clone())
        .with_auth(ApiAuth::Bearer { token: TOKEN.into() });
    let mut config = McpConfig::default();
    config.apis = BTreeMap::from([("github".to_string(), api)]);
    let harness = Harness::with(|builder| builder.mcp_servers(config)).await;
    let operations = harness.available().into_iter().filter(|t| t.name.starts_with("api__github__")).count();
    assert_eq!(operations, 1223, "every operation of the description is a tool");
    let outcome = within(
        60,
        harness.run(
            r#"
            const pulls = await tools.api__github__pulls_list({ owner: "octo", repo: "hello", state: "open", per_page: 5 });
            const file = await tools.api__github__repos_get_content({ owner: "octo", repo: "hello", path: "docs/README.md" });
            const issue = await tools.api__github__issues_create({ owner: "octo", repo: "hello", body: { title: "Found a bug", labels: ["bug"] } });
            const starred = await tools.api__github__activity_star_repo_for_authenticated_user({ owner: "octo", repo: "hello" });
            let refused;
            try { await tools.api__github__pulls_list({ owner: "octo", repo: "hello", state: "bogus" }) } catch (e) { refused = e.message }
            return { pulls: pulls.map((p) => p.number), file: file.type, issue: issue.number, starred, refused }"#,
        ),
    )
    .await;
    assert!(outcome.ok(), "{}", outcome.text());
    let value = outcome.value().unwrap();
    assert_eq!(value["pulls"], json!([1347]));
    assert_eq!(value["file"], "file", "asked for JSON, not the description's first media type");
    assert_eq!(value["issue"], 1347);
    assert_eq!(value["starred"], Value::Null, "204 No Content is null");
    // A request the description does not allow is answered 4xx by a program we did not write.
    let refused = value["refused"].as_str().unwrap();
    assert!(
        refused.starts_with("api__github__pulls_list: GET /repos/{owner}/{repo}/pulls answered 422 Unprocessable Entity"),
        "{refused}"
    );
    assert!(!outcome.text().contains(TOKEN));
}

#[tokio::test]
async fn a_call_that_needs_a_persons_sign_in_sends_one_person_once_and_keeps_the_tokens() {
    let server = PetServer::start().await;
    let spec_dir = tempfile::tempdir().unwrap();
    let spec = spec_dir.path().join("pets.yaml");
    std::fs::write(&spec, SPEC).unwrap();
    let auth = ApiAuth::AuthorizationCode {
        authorization_url: format!("{}/authorize", server.base),
        token_url: format!("{}/token", server.base),
        client: exec_host::mcp::OAuthClient::registered("pets-cli"),
        scopes: vec!["pets:read".into()],
    };
    let api = ApiConfig::new(SpecPlace::File(spec)).with_base_url(server.base.clone()).with_auth(auth);
    let mut config = McpConfig::default();
    config.apis = BTreeMap::from([("pets".to_string(), api)]);
    let credentials = spec_dir.path().join("credentials.json");
    let script = r#"
        const pets = await Promise.all([1, 2, 3].map(() => tools.api__pets__pets_get_one({ petId: "rex" })));
        return pets.map(pet => pet.auth)"#;

    // Nobody to send: the call fails at once, saying how to sign in, and nothing is sent.
    let nobody = {
        let (config, credentials) = (config.clone(), credentials.clone());
        Harness::with(move |builder| {
            builder.mcp_servers(config).mcp_credentials(Some(exec_host::mcp::CredentialsFile::at(credentials)))
        })
        .await
    };
    let outcome = within(30, nobody.run(script)).await;
    assert!(outcome.text().contains("API `pets` needs an OAuth sign-in"), "{}", outcome.text());
    assert!(outcome.text().contains("run `exec-host mcp login pets`"), "{}", outcome.text());
    assert!(server.requests().is_empty(), "{:?}", server.requests());

    // A person to send: the first calls wait for one sign-in, and all go with its token.
    let opened: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let login = {
        let opened = opened.clone();
        exec_host::mcp::Login::with_opener(move |what, address| {
            opened.lock().unwrap().push((what.to_string(), address.to_string()));
            let address = url::Url::parse(address).unwrap();
            let query: BTreeMap<String, String> = address.query_pairs().into_owned().collect();
            *CHALLENGE.lock().unwrap() = query.get("code_challenge").cloned();
            assert_eq!(query["code_challenge_method"], "S256");
            assert_eq!(query["client_id"], "pets-cli");
            assert_eq!(query["scope"], "pets:read");
            // The person agrees: the browser is sent back to the loopback listener.
            let back = url::Url::parse(&query["redirect_uri"]).unwrap();
            let state = query["state"].clone();
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut stream = tokio::net::TcpStream::connect((back.host_str().unwrap(), back.port().unwrap())).await.unwrap();
                let request = format!("GET {}?code=the-code&state={state} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n", back.path());
                stream.write_all(request.as_bytes()).await.unwrap();
                let mut answer = Vec::new();
                let _ = stream.read_to_end(&mut answer).await;
            });
            Ok(())
        })
    };
    let harness = {
        let (config, credentials) = (config.clone(), credentials.clone());
        Harness::with(move |builder| {
            builder.mcp_servers(config).mcp_credentials(Some(exec_host::mcp::CredentialsFile::at(credentials))).mcp_login(login)
        })
        .await
    };
    let outcome = within(60, harness.run(script)).await;
    assert!(outcome.ok(), "{}", outcome.text());
    assert_eq!(outcome.value().unwrap(), &json!(["Bearer [credential]", "Bearer [credential]", "Bearer [credential]"]));
    let opened = opened.lock().unwrap().clone();
    assert_eq!(opened.len(), 1, "one sign-in for the three calls: {opened:?}");
    assert_eq!(opened[0].0, "API `pets`");
    assert!(opened[0].1.starts_with(&format!("{}/authorize?", server.base)), "{}", opened[0].1);
    let seen = server.seen.lock().unwrap().clone();
    let pets: Vec<_> = seen.iter().filter(|(line, _)| line == "GET /pets/rex").collect();
    assert_eq!(pets.len(), 3);
    assert!(pets.iter().all(|(_, headers)| headers["authorization"] == format!("Bearer {PERSON_TOKEN}")), "{pets:?}");
    assert!(!outcome.text().contains(PERSON_TOKEN));
    // Kept for the next session, under the API's name, bound to its base URL.
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(&credentials).unwrap()).unwrap();
    assert_eq!(kept["apis"]["pets"]["resource"], server.base.as_str(), "{kept}");
    let again = Harness::with(move |builder| {
        builder.mcp_servers(config).mcp_credentials(Some(exec_host::mcp::CredentialsFile::at(credentials)))
    })
    .await;
    let outcome = within(30, again.run(script)).await;
    assert!(outcome.ok(), "the kept token is used without a person: {}", outcome.text());
}
