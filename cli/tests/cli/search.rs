//! `tools.ToolSearch` ranked as a model meets it: the builtins and the four published
//! reference servers, searched from a real Exec with the fixed queries of
//! `tests/search/reference-queries.json`.

use serde_json::{Value, json};

use crate::common::test_packages;
use crate::{Setup, mcp_config, stderr, stdout};

/// The workspace of `setup` with the four reference servers configured; the config's name.
fn reference_servers(setup: &Setup) -> String {
    let server = |name: &str| test_packages().join(format!("node_modules/@modelcontextprotocol/{name}/dist/index.js"));
    let workspace = setup.workspace.path().display().to_string();
    mcp_config(
        setup,
        json!({
            "everything": {"command": "node", "args": [server("server-everything"), "stdio"]},
            "fs": {"command": "node", "args": [server("server-filesystem"), workspace]},
            "memory": {"command": "node", "args": [server("server-memory")]},
            "thinking": {"command": "node", "args": [server("server-sequential-thinking")]},
        }),
    )
}

/// The measure of observed types: a ToolSearch answer for five reference tools that publish
/// no output schema, before and after each has answered once, in o200k tokens.
#[test]
fn five_untyped_tools_show_their_observed_types_once_they_answered() {
    let setup = Setup::new();
    let config = reference_servers(&setup);
    let script = r#"
        const five = ["echo", "get-sum", "get-annotated-message", "get-resource-links", "get-tiny-image"].map(t => "mcp__everything__" + t);
        const select = { query: "select:" + five.join(",") };
        const before = await tools.ToolSearch(select);
        await tools.mcp__everything__echo({ message: "a private message" });
        await tools["mcp__everything__get-sum"]({ a: 1234, b: 2 });
        await tools["mcp__everything__get-annotated-message"]({ messageType: "success", includeImage: false });
        await tools["mcp__everything__get-resource-links"]({ count: 2 });
        await tools["mcp__everything__get-tiny-image"]({});
        const after = await tools.ToolSearch(select);
        return { before: JSON.stringify(before), after: JSON.stringify(after), signatures: after.matches.map(m => m.signature) };"#;
    let output = setup.run(&["run", "--json", "--mcp-config", &config, "-e", script]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let value = &report["value"];
    for signature in value["signatures"].as_array().unwrap() {
        let signature = signature.as_str().unwrap();
        assert!(signature.ends_with("Promise<string /* observed */>"), "{signature}");
        assert!(!signature.contains("private") && !signature.contains("1234"), "no value: {signature}");
    }
    let tokens = |text: &str| tiktoken_rs::o200k_base_singleton().encode_ordinary(text).len();
    let (before, after) = (value["before"].as_str().unwrap(), value["after"].as_str().unwrap());
    assert!(before.contains("Promise<unknown>") && !before.contains("observed"), "{before}");
    eprintln!(
        "a ToolSearch answer for five untyped reference tools: {} bytes, {} tokens before they answered; {} bytes, {} tokens after",
        before.len(),
        tokens(before),
        after.len(),
        tokens(after)
    );
}

#[test]
fn the_reference_queries_put_their_expected_tools_in_the_first_three() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let set: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("tests/search/reference-queries.json")).unwrap()).unwrap();
    let queries = set["queries"].as_array().unwrap();
    assert!(queries.len() >= 30, "the set keeps at least 30 queries");

    let setup = Setup::new();
    let config = reference_servers(&setup);
    let asked: Vec<&str> = queries.iter().map(|query| query["query"].as_str().unwrap()).collect();
    let script = format!(
        "const found = [];
         for (const query of {asked}) found.push(await tools.ToolSearch({{ query, max_results: 3 }}));
         return found;",
        asked = serde_json::to_string(&asked).unwrap()
    );
    let output = setup.run(&["run", "--json", "--mcp-config", &config, "-e", &script]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let found = report["value"].as_array().unwrap_or_else(|| panic!("{report}"));

    let mut first = 0;
    let mut failures = Vec::new();
    for (query, result) in queries.iter().zip(found) {
        let names: Vec<&str> = result["matches"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
        let expect: Vec<&str> = query["expect"].as_array().unwrap().iter().map(|name| name.as_str().unwrap()).collect();
        let asked = query["query"].as_str().unwrap();
        let right = match expect.first() {
            None => result["total"] == 0,
            Some(best) => {
                (query["any_order"] == true || names.first() == Some(best)) && expect.iter().all(|name| names.contains(name))
            }
        };
        first += usize::from(right);
        if !right {
            failures.push(format!("{asked:?}: expected {expect:?} in the first three (the first first), found {names:?}"));
        }
    }
    eprintln!("{first} of {} reference queries rank as expected", queries.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // A search that finds nothing says where the reachable tools come from.
    let (_, nothing) =
        queries.iter().zip(found).find(|(query, _)| query["expect"] == json!([])).expect("a query that finds nothing");
    let note = nothing["note"].as_str().unwrap_or_else(|| panic!("no note: {nothing}"));
    for server in ["builtin", "MCP server everything", "MCP server fs", "MCP server memory", "MCP server thinking"] {
        assert!(note.contains(server), "{server}: {note}");
    }
}

/// GitHub's whole published description as an API source: its 1,223 operations searched with
/// the task-like queries of `tests/search/github-queries.json`, and what a model is given
/// for it counted.
#[test]
fn githubs_operations_are_found_by_task_like_queries_and_announced_in_one_line() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let set: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("tests/search/github-queries.json")).unwrap()).unwrap();
    let queries = set["queries"].as_array().unwrap();
    assert_eq!(queries.len(), 40, "the set keeps its 40 queries");

    let setup = Setup::new();
    let spec = test_packages().join("node_modules/@octokit/openapi/generated/api.github.com.json");
    let config = json!({ "apis": { "github": { "spec": spec, "baseUrl": "https://api.github.com" } } });
    std::fs::write(setup.workspace.path().join("apis.json"), config.to_string()).unwrap();
    let asked: Vec<&str> = queries.iter().map(|query| query["query"].as_str().unwrap()).collect();
    let script = format!(
        "const found = [];
         for (const query of {asked}) found.push((await tools.ToolSearch({{ query, max_results: 3 }})).matches.map(m => m.name));
         return found;",
        asked = serde_json::to_string(&asked).unwrap()
    );
    let output = setup.run(&["run", "--json", "--mcp-config", "apis.json", "-e", &script]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let found = report["value"].as_array().unwrap_or_else(|| panic!("{report}"));
    let mut missed = Vec::new();
    for (query, names) in queries.iter().zip(found) {
        let expect = &query["expect"];
        if !names.as_array().unwrap().contains(expect) {
            missed.push(format!("{}: expected {expect} in the first three, found {names}", query["query"]));
        }
    }
    let hits = queries.len() - missed.len();
    eprintln!(
        "{hits} of {} GitHub queries put the expected operation in the first three; missed:\n{}",
        queries.len(),
        missed.join("\n")
    );
    assert!(hits * 10 >= queries.len() * 9, "fewer than 90 %: {}", missed.join("\n"));

    // The announcement names the API in one line, not its 1,223 operations; with Exec's
    // declaration it stays within 1,500 tokens.
    let stats = setup.run(&["tools", "--stats", "--mcp-config", "apis.json"]);
    assert_eq!(stats.status.code(), Some(0), "{}", stderr(&stats));
    let text = stdout(&stats);
    let tokens = |row: &str| -> usize {
        let line = text.lines().find(|line| line.starts_with(row)).unwrap_or_else(|| panic!("no {row} row: {text}"));
        line.split_whitespace().last().unwrap().parse().unwrap()
    };
    let (exec, announcement) = (tokens("Exec alone"), tokens("announcement"));
    eprintln!("with GitHub's description loaded: Exec's declaration {exec} tokens, the announcement {announcement} (o200k_base)");
    assert!(exec + announcement <= 1_500, "{exec} + {announcement} tokens");
}
