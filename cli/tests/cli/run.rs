//! `exec-host run` as a user runs it: exit statuses, the JSON contract, input from a file,
//! standard input or `-e`, limits, bad input, Ctrl-C, TypeScript and where a failure is.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};

use crate::common::{exec_host, fixture_mcp_server};
use crate::{Setup, assert_usage_error, json_of, send, stderr, stdout, wait_until};

/// Sends SIGINT, as Ctrl-C in a terminal does.
fn interrupt(child: &std::process::Child) {
    send(child, libc::SIGINT);
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
    assert_eq!(
        keys,
        ["ok", "text", "value", "logs", "images", "calls", "call_details", "messages", "summary", "error", "error_stage"]
    );
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

#[test]
fn a_long_result_is_compacted_and_kept_whole_in_a_file() {
    let setup = Setup::new();
    let script = setup.script("long.js", "return Array.from({ length: 3000 }, (_, i) => `line ${i}`).join('\\n')");
    let output = setup.run(&["run", &script]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.starts_with("line 0\n") && text.trim_end().ends_with("line 2999"), "head and tail are shown");
    assert!(text.contains("characters not shown: in an Exec script, tools.view_tool_call({ id: \"run-"), "{}", &text[5990..6200]);
    let errors = stderr(&output);
    let file = errors.lines().find_map(|line| line.strip_prefix("[the whole result (")).expect("the file is named");
    let (path, how) = file.split(" characters) is in ").nth(1).unwrap().split_once("; read it part by part with: ").unwrap();
    assert!(path.starts_with(setup.workspace.path().join(".state/exec-host/results").to_str().unwrap()), "{path}");
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(kept["text"].as_str().unwrap().contains("line 1500\n"), "the whole result is kept");
    // The command the hint names prints the part asked for.
    let id = how.trim_end_matches(']').strip_prefix("exec-host view ").unwrap();
    let part = setup.run(&["view", id, "--offset", "7000", "--limit", "100"]);
    assert_eq!(part.status.code(), Some(0), "{}", stderr(&part));
    let part = stdout(&part);
    assert!(part.starts_with("[characters 7000 to 7100 of ") && part.contains("the next part starts at offset 7100"), "{part}");
    let unknown = setup.run(&["view", "run-0-0"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("no result is kept for call \"run-0-0\""), "{}", stderr(&unknown));
}

#[test]
fn a_value_past_the_result_cap_is_kept_whole_and_view_reaches_its_end() {
    let setup = Setup::new();
    // 60,007 characters: twice the result cap; what the model reads is cut, what is kept is not.
    let output = setup.run(&["run", "-e", "return 'ab'.repeat(30000) + 'THE-END'"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.trim_end().ends_with("abTHE-END"), "the tail shown is the value's own end: {}", &text[text.len() - 200..]);
    let errors = stderr(&output);
    let hint = errors.lines().find_map(|line| line.strip_prefix("[the whole result (")).expect("the file is named");
    assert!(hint.starts_with("60007 characters) is in "), "the whole value is counted: {hint}");
    let id = hint.split("exec-host view ").nth(1).unwrap().trim_end_matches(']');
    let end = setup.run(&["view", id, "--offset", "59000", "--limit", "8000"]);
    assert_eq!(end.status.code(), Some(0), "{}", stderr(&end));
    let end = stdout(&end);
    assert!(end.starts_with("[characters 59000 to 60007 of 60007 of the result of call"), "{}", &end[..80]);
    assert!(end.trim_end().ends_with("abTHE-END"), "view reaches the end of the value: {end}");

    // Past the kept bound, the kept text is cut there and says the value's length.
    let huge = setup.run(&["run", "--json", "-e", "return 'x'.repeat(1_200_000)"]);
    assert_eq!(huge.status.code(), Some(0), "{}", stderr(&huge));
    let text = json_of(&huge)["text"].as_str().unwrap().to_string();
    let note = format!("[result cut: 1200000 characters in all, the first {} shown]", exec_host::limits::MAX_KEPT_RESULT_CHARS);
    assert!(text.trim_end().ends_with(&note), "the kept text says where it was cut: {}", &text[text.len() - 200..]);
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
    // Type-only imports and exports go with the types; a value import is refused at its line.
    let typed = setup.script(
        "typed.ts",
        "import type { Ticket } from './tickets';\nexport type Id = string;\nconst t: Ticket = { id: 'a' as Id };\nreturn t.id;",
    );
    let output = setup.run(&["run", "--json", &typed]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert_eq!(json_of(&output)["value"], json!("a"));
    let imports = setup.script("imports.ts", "const a: number = 1;\nimport { x } from './x';\nreturn a + x;");
    let output = setup.run(&["run", &imports]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("line 2"), "{}", stdout(&output));
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

    // A script that catches the error reads the same sentence, as V8 would give at least its
    // first words; the stack keeps the engine's form.
    let caught = "try { await tools.raed_file({ path: 'x' }) } catch (e) { return [e.name, e.message, e.stack] }";
    let output = setup.run(&["run", "--json", "-e", caught]);
    let value = json_of(&output)["value"].clone();
    assert_eq!(value[0], "TypeError", "{value}");
    assert!(
        value[1].as_str().unwrap().starts_with(
            "tools.raed_file is not a function (`raed_file` is not a tool this script can reach; \
             tools.ToolSearch finds tools by keyword. Did you mean `read_file`"
        ),
        "{value}"
    );
    assert!(
        value[2].as_str().unwrap().starts_with("    at ") && value[2].as_str().unwrap().contains(" (script.js:1:"),
        "{value}"
    );
    let other = "const o = {}; try { o.missing() } catch (e) { return e.message }";
    assert_eq!(json_of(&setup.run(&["run", "--json", "-e", other]))["value"], "o.missing is not a function");

    // The host reads the script once per place, for at most 64 places a run: the same failing
    // call in a loop costs one look, and the 65th place keeps the engine's words.
    let places: String = (0..70).map(|i| format!("try {{ o.f{i}() }} catch (e) {{ said.push(e.message) }}\n")).collect();
    let code = format!(
        "const o = {{}}; const said = [];\nfor (let i = 0; i < 1000; i++) {{ try {{ o.again() }} catch (e) {{}} }}\n{places}return said"
    );
    let said = json_of(&setup.run(&["run", "--json", "-e", &code]))["value"].clone();
    let said: Vec<&str> = said.as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
    assert_eq!(said[0], "o.f0 is not a function");
    assert_eq!(said[62], "o.f62 is not a function", "the loop's one place and 63 more are named");
    assert_eq!(said[63], "not a function", "past the bound, the engine's words");
}

/// The guide's table of `run --json`'s keys and `run --help`'s list say what the binary
/// prints: a key added or dropped fails here until both are corrected.
#[test]
fn the_guide_and_help_name_exactly_the_keys_run_json_prints() {
    let setup = Setup::new();
    let output = setup.run(&["run", "-e", "console.log('x'); return 1", "--json"]);
    let mut printed: Vec<String> = json_of(&output).as_object().unwrap().keys().cloned().collect();
    printed.sort();
    let page = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/guide/command-line.md");
    let page = std::fs::read_to_string(page).unwrap();
    let table = page.split("one JSON object with exactly these keys:").nth(1).expect("the guide's table of keys");
    let mut documented: Vec<String> = table
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .filter_map(|line| line.split('`').nth(1).map(str::to_string))
        .filter(|key| key != "key")
        .collect();
    documented.sort();
    assert_eq!(documented, printed, "the table of docs/guide/command-line.md");
    let help = String::from_utf8(setup.run(&["run", "--help"]).stdout).unwrap();
    let listed = help.split("--json").nth(1).unwrap_or_default();
    let listed: String = listed.lines().take(3).collect::<Vec<_>>().join(" ");
    for key in &printed {
        assert!(listed.contains(key.as_str()), "`run --help` does not list `{key}`: {listed}");
    }
}
