//! Permissions from the command line and the settings files: rules, modes, `Exec`'s own
//! authorization, hooks, and the errors of a malformed file.

use serde_json::json;

use crate::{Setup, WRITES, assert_usage_error, json_of, pool_setup, stderr, stdout};

#[test]
fn run_leaves_denied_tools_out_of_the_script() {
    let (setup, config) = pool_setup();
    std::fs::write(setup.workspace.path().join("deny.json"), r#"{"permissions": {"deny": ["write_file"]}}"#).unwrap();
    let script = setup.script(
        "s.js",
        "const found = await tools.ToolSearch({ query: 'select:write_file,read_file,mcp__fx__fail,mcp__fx__greet' });
         let fail; try { await tools.mcp__fx__fail({}); } catch (e) { fail = e.message; }
         return { writeFile: typeof tools.write_file, found: found.matches.map(m => m.name), fail };",
    );
    let output = setup.run(&["run", "--json", "--settings", "deny.json", "--mcp-config", &config, &script]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let value = &json_of(&output)["value"];
    assert_eq!(value["writeFile"], "undefined");
    assert_eq!(value["found"], json!(["read_file"]), "the pool: not the flat greet, not the denied ones");
    assert!(value["fail"].as_str().unwrap().contains("not reachable"), "{value}");
}

#[test]
fn settings_errors_name_the_file_and_the_key() {
    let setup = Setup::new();
    let script = setup.script("s.js", "return 1");
    assert_usage_error(&setup.run(&["tools", "--settings", "missing.json"]), "the settings file missing.json does not exist");
    assert_usage_error(&setup.run(&["search", "x", "--settings", "."]), "the settings file . is a directory");
    let project = setup.workspace.path().join(".exec-host");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("settings.json"), "{\n  \"enableExec\": \"yes\"\n}").unwrap();
    for args in [vec!["run", script.as_str()], vec!["tools"], vec!["search", "x"]] {
        let output = setup.run(&args);
        assert_usage_error(&output, ".exec-host/settings.json: enableExec: invalid type: string \"yes\"");
        assert!(stderr(&output).contains("line 2"), "{}", stderr(&output));
    }
    std::fs::write(project.join("settings.json"), r#"{"permissions": {"deny": ["Bash(rm"]}}"#).unwrap();
    assert_usage_error(&setup.run(&["tools"]), "permissions.deny[0]: rule \"Bash(rm\"");
}

#[test]
fn run_honours_exec_s_own_authorization() {
    let setup = Setup::new();
    let script = setup.script("s.js", "await tools.write_file({ path: 'ran', content: '' }); return 1");
    std::fs::write(setup.workspace.path().join("deny.json"), r#"{"permissions": {"deny": ["Exec"]}}"#).unwrap();
    let output = setup.run(&["run", "--json", "--settings", "deny.json", &script]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let object = json_of(&output);
    assert_eq!(object["ok"], false);
    assert_eq!(object["error"], "`Exec` is denied by the permissions.deny rule `Exec` in the settings file `deny.json`");
    assert_eq!(object["calls"], json!([]));
    assert!(!setup.workspace.path().join("ran").exists(), "no script ran");

    std::fs::write(setup.workspace.path().join("off.json"), r#"{"enableExec": false}"#).unwrap();
    let output = setup.run(&["run", "--settings", "off.json", &script]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("`\"enableExec\": false` in the settings file `off.json`"), "{}", stdout(&output));
    assert!(!setup.workspace.path().join("ran").exists());
}

#[test]
fn permission_flags_and_modes_apply_to_run() {
    let setup = Setup::new();
    let script = setup.script("s.js", WRITES);
    // run starts in bypassPermissions: the author wrote the script.
    assert_eq!(setup.run(&["run", &script]).status.code(), Some(0));
    // With no terminal, a call an ask rule asks for is refused, saying what would let it run:
    // not an allow rule, which an ask rule outranks (deny, then ask, then allow).
    for extra in [&[][..], &["--allow", "write_file"]] {
        let output = setup.run(&[&["run", "--json", "--ask", "write_file"][..], extra, &[&script]].concat());
        assert_eq!(output.status.code(), Some(1));
        let error = json_of(&output)["error"].as_str().unwrap().to_string();
        assert!(
            error.contains(
                "`write_file` was denied: it needs approval (the permissions.ask rule `write_file` in the command line)"
            ),
            "{error}"
        );
        assert!(error.contains("stronger than any allow rule, so `--allow` does not lift it: remove the rule"), "{error}");
        assert_eq!(json_of(&output)["calls"], json!(["write_file"]), "a refused call counts");
    }
    // A call the mode asks for is refused naming the flag and the rule that let it run.
    let output = setup.run(&["run", "--json", "--permission-mode", "default", &script]);
    let error = json_of(&output)["error"].as_str().unwrap().to_string();
    assert!(
        error.contains("run with `--allow write_file`, or add \"write_file\" to permissions.allow in a settings file"),
        "{error}"
    );
    // The default mode asks before writes, not before reads; an allow rule lets writes run.
    let reads = setup.script("r.js", "return (await tools.read_file({ path: 's.js' })).total_lines");
    assert_eq!(setup.run(&["run", "--permission-mode", "default", &reads]).status.code(), Some(0));
    let output = setup.run(&["run", "--permission-mode", "default", &script]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("the permission mode default asks before workspace edits"), "{}", stdout(&output));
    let allowed = setup.run(&["run", "--permission-mode", "default", "--allow", "write_file(*.txt)", &script]);
    assert_eq!(allowed.status.code(), Some(0), "{}", stdout(&allowed));
    let output = setup.run(&["run", "--permission-mode", "acceptEdits", &script]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    // A deny rule with a path applies in bypassPermissions too, and names where it came from.
    let output = setup.run(&["run", "--deny", "write_file(a.*)", "--allow", "write_file", &script]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout(&output).contains("`write_file` is denied by the permissions.deny rule `write_file(a.*)` in the command line")
    );
    // Bad rules and modes are usage errors.
    assert_usage_error(
        &setup.run(&["run", "--allow", "mcp__srv__tool(x)", &script]),
        "a rule about a tool of an MCP server or an API takes no specifier",
    );
    assert_usage_error(&setup.run(&["run", "--permission-mode", "yolo", &script]), "invalid value 'yolo'");
}

#[test]
fn hooks_and_malformed_settings_in_run() {
    let setup = Setup::new();
    let script = setup.script("s.js", WRITES);
    std::fs::write(setup.workspace.path().join("frozen.sh"), "cat > /dev/null\necho 'writes are frozen' >&2\nexit 2\n").unwrap();
    let hooks =
        json!({"hooks": {"PreToolUse": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "sh frozen.sh"}]}]}});
    std::fs::write(setup.workspace.path().join("hooks.json"), hooks.to_string()).unwrap();
    let output = setup.run(&["run", "--settings", "hooks.json", &script]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("PreToolUse:write_file hook error: writes are frozen"), "{}", stdout(&output));
    assert!(!setup.workspace.path().join("a.txt").exists());

    let bad = "{\"hooks\": {\"PreToolUse\": [\n  {\"matcher\": \"(\", \"hooks\": []}\n]}}";
    std::fs::write(setup.workspace.path().join("bad-hooks.json"), bad).unwrap();
    let output = setup.run(&["run", "--settings", "bad-hooks.json", &script]);
    assert_usage_error(&output, "bad-hooks.json: hooks.PreToolUse[0].matcher");
    assert!(stderr(&output).contains("line 2"), "{}", stderr(&output));
    let bad = "{\"permissions\": {\n  \"deny\": [\"read_file(\"]\n}}";
    std::fs::write(setup.workspace.path().join("bad-rules.json"), bad).unwrap();
    let output = setup.run(&["run", "--settings", "bad-rules.json", &script]);
    assert_usage_error(&output, "bad-rules.json: permissions.deny[0]");
    assert!(stderr(&output).contains("line 2"), "{}", stderr(&output));
}
