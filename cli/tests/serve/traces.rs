//! `serve`'s OpenTelemetry traces, received as a collector receives them: OTLP over HTTP
//! (protobuf) at `/v1/traces`, decoded with the protocol's own message types. A call that
//! carries the client's W3C trace context continues the client's trace: its server span is
//! the child of the client's, the Exec's span the child of that, each nested call's the
//! child of the Exec's.

use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::json;

use crate::common;
use common::{HttpServer, exec_host, fixture_mcp_server, shared_cache};

/// A collector's OTLP/HTTP receiver: every export request it was sent, decoded.
struct Collector {
    url: String,
    received: Arc<Mutex<Vec<ExportTraceServiceRequest>>>,
}

impl Collector {
    fn start() -> Self {
        let received = Arc::new(Mutex::new(Vec::new()));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let kept = received.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async move {
                let export = move |body: axum::body::Bytes| {
                    let kept = kept.clone();
                    async move {
                        let request = ExportTraceServiceRequest::decode(body).expect("an OTLP export request");
                        kept.lock().unwrap().push(request);
                        axum::http::StatusCode::OK
                    }
                };
                let app = axum::Router::new().route("/v1/traces", axum::routing::post(export));
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                axum::serve(listener, app).await.unwrap();
            });
        });
        Collector { url, received }
    }

    fn spans(&self) -> Vec<Span> {
        let received = self.received.lock().unwrap();
        received
            .iter()
            .flat_map(|request| &request.resource_spans)
            .flat_map(|resource| &resource.scope_spans)
            .flat_map(|scope| scope.spans.clone())
            .collect()
    }

    fn service_names(&self) -> Vec<String> {
        let received = self.received.lock().unwrap();
        received
            .iter()
            .flat_map(|request| &request.resource_spans)
            .filter_map(|resource| resource.resource.as_ref())
            .flat_map(|resource| &resource.attributes)
            .filter(|attribute| attribute.key == "service.name")
            .filter_map(|attribute| attribute.value.as_ref().and_then(|value| value.value.clone()))
            .map(|value| format!("{value:?}"))
            .collect()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn a_call_with_the_clients_trace_context_continues_its_trace_down_to_each_nested_call() {
    let collector = Collector::start();
    let workspace = tempfile::tempdir().unwrap();
    let config = json!({"mcpServers": {"fx": {"command": fixture_mcp_server()}}});
    std::fs::write(workspace.path().join("servers.json"), config.to_string()).unwrap();
    let mut command = exec_host(workspace.path(), &shared_cache());
    command
        .args(["serve", "--http", "0", "--mcp-config", "servers.json", "--allow", "mcp__fx", "--otlp-endpoint"])
        .arg(&collector.url)
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    let mut server = HttpServer::start(command);

    let (trace, parent) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let code =
        "await tools.mcp__fx__echo({ i: 1 }); await tools.read_file({ path: 'missing.txt' }).catch(() => 0); return 'traced'";
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "traceparent": format!("00-{trace}-{parent}-01"),
    });
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "Exec", "arguments": {"code": code}, "_meta": meta}});
    let (status, _, body) = common::request("POST", &server.url, &common::EXEC_CALL_HEADERS, call.to_string().into_bytes());
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("traced"), "{body}");
    // A stopping server sends the spans it still holds.
    server.terminate();
    assert!(server.exited_within(30).is_some(), "serve did not stop");

    let spans = collector.spans();
    let named = |name: &str| {
        spans
            .iter()
            .find(|span| span.name == name)
            .unwrap_or_else(|| panic!("no span `{name}` among {:?}", spans.iter().map(|s| &s.name).collect::<Vec<_>>()))
    };
    let call_span = named("tools/call Exec");
    assert_eq!(hex(&call_span.trace_id), trace, "the client's trace goes on");
    assert_eq!(hex(&call_span.parent_span_id), parent, "beneath the client's span");
    assert_eq!(call_span.kind, 2, "a server span");
    let exec = named("Exec");
    assert_eq!(exec.parent_span_id, call_span.span_id);
    let echo = named("mcp__fx__echo");
    let read = named("read_file");
    for nested in [echo, read] {
        assert_eq!(nested.parent_span_id, exec.span_id, "{} is beneath the Exec", nested.name);
        assert_eq!(hex(&nested.trace_id), trace);
    }
    assert_eq!(read.status.as_ref().map(|status| status.code), Some(2), "the failed call's span is an error");
    assert_ne!(echo.status.as_ref().map(|status| status.code), Some(2));
    assert!(collector.service_names().iter().any(|name| name.contains("exec-host")), "{:?}", collector.service_names());
}
