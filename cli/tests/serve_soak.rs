//! A soak of `serve --http`: one client sends hostile scripts (text that nests past any
//! parser's stack, web globals over huge inputs, endless timers, loops and allocations)
//! while another sends normal ones, whose answers must stay right and prompt. It has a
//! binary of its own so that its load never slows the other suites' timed steps.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;
use common::{HttpServer, JSON_POST, exec_host, request, shared_cache};

/// A soak of one server shared by a hostile client and a normal one: while the hostile one
/// sends scripts that once crashed or stalled the host (TypeScript nested past every stack,
/// huge web-global inputs, timer floods, runaway loops and memory), every call of the normal
/// one is answered, and rightly. Its latencies alone and under that load are printed (the
/// machine is shared, so they are figures, not a check).
#[test]
fn a_hostile_client_leaves_a_normal_client_s_calls_unaffected() {
    let workspace = tempfile::tempdir().unwrap();
    let mut command = exec_host(workspace.path(), &shared_cache());
    command.args(["serve", "--http", "127.0.0.1:0", "--stateless", "--budget-ms", "2000", "--max-nested-wait-ms", "3000"]);
    let server = HttpServer::start(command);
    let call = |id: u64, code: &str| {
        let call =
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "Exec", "arguments": {"code": code}}});
        let started = Instant::now();
        let (status, _, body) = request("POST", &server.url, JSON_POST, call.to_string().into_bytes());
        (status, body, started.elapsed())
    };
    let normal = |seconds: u64| {
        let mut took = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(seconds);
        while Instant::now() < deadline {
            let (status, body, elapsed) = call(took.len() as u64 + 1, "return 6 * 7");
            assert_eq!(status, 200, "{body}");
            let answer: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
            assert_eq!(answer["result"]["content"][0]["text"], "42", "a normal call went wrong: {body}");
            took.push(elapsed);
        }
        took.sort();
        took
    };
    let hostile: Vec<String> = vec![
        format!("let x: number = {}1;", "- ".repeat(60_000)),
        format!("{}x; let y: number = 1;", "await ".repeat(300_000)),
        format!("let x: {}T; return 1;", "keyof ".repeat(50_000)),
        format!("type X = {}T; return 1;", "A extends B ? C : ".repeat(20_000)),
        "try { return atob('A'.repeat(100 * 1024 * 1024)).length; } catch (e) { return e.name; }".into(),
        "try { return new TextDecoder().decode(new Uint8Array(80 * 1024 * 1024).fill(255)).length; } catch (e) { return e.name; }".into(),
        "for (;;) await new Promise((r) => setTimeout(r, 0));".into(),
        "for (;;) {}".into(),
        "let s = 'x'; for (;;) s += s;".into(),
    ];
    let alone = normal(3);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let attacker = {
        let (stop, url) = (stop.clone(), server.url.clone());
        std::thread::spawn(move || {
            let mut sent = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let code = &hostile[sent as usize % hostile.len()];
                let call = json!({"jsonrpc": "2.0", "id": sent, "method": "tools/call", "params": {"name": "Exec", "arguments": {"code": code}}});
                let (status, _, body) = request("POST", &url, JSON_POST, call.to_string().into_bytes());
                assert!(status == 200 || status == 503, "a hostile call got {status}: {body}");
                sent += 1;
            }
            sent
        })
    };
    let loaded = normal(20);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let sent = attacker.join().expect("the hostile client's answers were all well-formed");
    let (status, body, _) = call(0, "return 'still serving'");
    assert!(status == 200 && body.contains("still serving"), "{status} {body}");
    let median = |took: &[Duration]| took[took.len() / 2];
    let p99 = |took: &[Duration]| took[(took.len() * 99 / 100).min(took.len() - 1)];
    eprintln!(
        "normal calls alone: {} (median {:?}, p99 {:?}); beside {sent} hostile scripts: {} (median {:?}, p99 {:?})",
        alone.len(),
        median(&alone),
        p99(&alone),
        loaded.len(),
        median(&loaded),
        p99(&loaded)
    );
}
