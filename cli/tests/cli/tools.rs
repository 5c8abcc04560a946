//! `exec-host tools`, `search`, `completions` and `man`: what a model is given, its declaration
//! file, and the search a script makes.

use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::common::{fixture_mcp_server, test_packages};
use crate::{Setup, assert_usage_error, json_of, mcp_config, pool_setup, stderr, stdout};

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
    assert_eq!(declared, ["Exec", "mcp__fx__greet", "mcp__fx__pinned"]);
    let pool = section("Pool (");
    for pooled in ["mcp__fx__add", "read_file", "write_file", "view_tool_call"] {
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
    // The workspace tools and the published server, nothing else: the setup the docs quote.
    let setup = Setup::new();
    let everything = test_packages().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let config = mcp_config(&setup, json!({"everything": {"command": "node", "args": [everything, "stdio"]}}));
    let output = setup.run(&["tools", "--stats", "--mcp-config", &config]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let row = |label: &str| -> Vec<usize> {
        let line = text.lines().find(|line| line.starts_with(label)).unwrap_or_else(|| panic!("no {label} row in\n{text}"));
        line[label.len()..].split_whitespace().map(|n| n.parse().unwrap()).collect()
    };
    let (exec_alone, exec, flat, announcement) = (row("Exec alone"), row("Exec mode"), row("flat mode"), row("announcement"));
    assert!(exec[0] < flat[0] && exec[1] < flat[1] && exec[2] < flat[2], "{text}");
    // Exec's declaration, every rule and ToolSearch's call form in it, fits in 450 tokens of
    // a real tokenizer (about a quarter of its bytes for English and JSON).
    assert_eq!(exec_alone[0], 1, "{text}");
    assert!(exec_alone[2] <= 450, "Exec's declaration takes {} tokens:\n{text}", exec_alone[2]);
    assert!(exec_alone[2] > exec_alone[1] / 6 && exec_alone[2] < exec_alone[1] / 2, "tokens are counted, not estimated: {text}");
    assert!(text.contains("fewer tokens") && text.contains("o200k_base"), "{text}");

    // The announcement counts the pool's names, and its bytes are those of its text.
    let listed = json_of(&setup.run(&["tools", "--json", "--mcp-config", &config]));
    let names = listed["pool"].as_array().unwrap().len();
    assert_eq!(announcement[0], names, "{text}");
    assert_eq!(announcement[1], listed["announcement"].as_str().unwrap().len(), "{text}");
    assert!(text.contains("tiktoken-rs") && text.contains("once per conversation"), "the method is stated:\n{text}");

    // The guide, the README and the performance notes quote these figures: they stay what the
    // binary prints.
    let thousands = |n: usize| {
        let digits = n.to_string();
        let mut grouped = String::new();
        for (i, digit) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                grouped.push(',');
            }
            grouped.push(digit);
        }
        grouped
    };
    let figures = |row: &[usize]| (row[0], thousands(row[1]), thousands(row[2]));
    let ((e, e_bytes, e_tokens), (f, f_bytes, f_tokens)) = (figures(&exec[..]), figures(&flat[..]));
    let saved = format!("{e} declaration in {e_bytes} bytes ({e_tokens} tokens) against {f} in {f_bytes} ({f_tokens} tokens)");
    let quoted = [
        ("docs/guide/deferred-pool.md", saved.clone()),
        ("README.md", saved),
        (
            "docs/performance.md",
            format!(
                "{e} tool (`Exec`) in {e_bytes} bytes ({e_tokens} tokens) against {f} tools in {f_bytes} bytes ({f_tokens} tokens) flat"
            ),
        ),
        (
            "docs/performance.md",
            format!(
                "the announcement of the {} pooled names is a message of\n{} bytes",
                announcement[0],
                thousands(announcement[1])
            ),
        ),
    ];
    for (file, figures) in quoted {
        let doc = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(file)).unwrap();
        let doc = doc.split_whitespace().collect::<Vec<_>>().join(" ");
        let figures = figures.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(doc.contains(&figures), "{file} should say \"{figures}\", as the binary prints:\n{text}");
    }
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

    let output = setup.run(&["search", "nothingmatches", "--mcp-config", &config]);
    assert_eq!(output.status.code(), Some(1), "no match: exit 1, as grep");
    assert!(stderr(&output).contains("no tool matches \"nothingmatches\""), "{}", stderr(&output));
    assert!(stderr(&output).contains("of the MCP server fx"), "where the tools come from: {}", stderr(&output));
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

    // The web globals are declared as the guest has them, and nothing it lacks.
    let web = check(
        "web.ts",
        "const answer = await fetch(new URL('/notes', 'https://api.example.com'), {
           method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ a: 1 }),
           signal: AbortSignal.any([AbortSignal.timeout(1000), new AbortController().signal]),
         });
         const data: unknown = await answer.json();
         const text = new TextDecoder().decode(new TextEncoder().encode('hi'));
         const id = setTimeout((n: number) => console.log(n), 10, 1);
         clearTimeout(id);
         for (const [key, value] of new URLSearchParams({ q: 'x' })) console.log(key, value);
         for (const [name, value] of answer.headers) console.log(name, value);
         const copy = structuredClone({ when: new Date() });
         queueMicrotask(() => console.log(copy.when.getTime()));
         const failed = new DOMException('no', 'AbortError');
         console.log(answer.ok, answer.status, data, text, btoa(atob('aGk=')), failed.code, new Request('https://x.example').method);",
    );
    assert!(web.status.success(), "{}{}", stdout(&web), stderr(&web));
    let lacking = check("lacking.ts", "setInterval(() => {}, 1); await fetch(42); new Blob();");
    let errors = stdout(&lacking);
    assert!(
        errors.contains("Cannot find name 'setInterval'")
            && errors.contains("Cannot find name 'Blob'")
            && errors.contains("Argument of type 'number' is not assignable"),
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

#[test]
fn the_manual_page_is_made_from_the_command_line_definition() {
    let setup = Setup::new();
    let output = setup.run(&["man"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let page = stdout(&output);
    assert!(page.contains(".TH exec-host 1"), "{}", &page[..200.min(page.len())]);
    for section in ["EXEC-HOST RUN", "EXEC-HOST SERVE", "EXEC-HOST DOCTOR", "EXEC-HOST MCP LOGIN", "EXIT STATUS", "FILES"] {
        assert!(page.contains(section), "{section}");
    }
    for flag in ["mcp\\-config", "enable\\-bash", "state\\-store", "on\\-ask"] {
        assert!(page.contains(flag), "{flag}");
    }
    // Each line of roff is a request, a macro or text: nothing a formatter reads as a
    // stray command (a text line starting with a dot or an apostrophe would be one).
    for line in page.lines().filter(|line| line.starts_with('.') || line.starts_with('\'')) {
        let request = line.split_whitespace().next().unwrap();
        let known =
            [".TH", ".SH", ".SS", ".TP", ".PP", ".IP", ".RS", ".RE", ".br", ".sp", ".ie", ".el", ".nh", ".ad", ".B", ".I"];
        assert!(known.contains(&request), "{line}");
    }
}
