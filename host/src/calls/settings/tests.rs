use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use cap_std::fs::Dir;
use serde_json::Value;

use super::*;

fn layer(text: &str) -> Layer {
    Layer::parse(text, Path::new("settings.json")).unwrap()
}

#[test]
fn rules_parse_as_claude_code_writes_them() {
    let rule = Rule::parse("write_file").unwrap();
    assert_eq!((rule.tool.as_str(), rule.pattern.as_deref()), ("write_file", None));
    let foreign = Rule::parse("WebSearch(domain:example.com)").unwrap();
    assert_eq!((foreign.tool.as_str(), foreign.pattern.as_deref()), ("WebSearch", Some("domain:example.com")));
    assert!(
        foreign.is_foreign() && !foreign.applies("WebSearch", &Touched::default()),
        "a tool this host does not have: never applies"
    );
    let shell = Rule::parse("Bash(rm:*)").unwrap();
    assert!(!shell.is_foreign() && shell.applies("Bash", &Touched::command("rm -rf x")), "the Bash tool's rules apply");
    assert_eq!(Rule::parse("Read(./secrets/(x))").unwrap().pattern.as_deref(), Some("./secrets/(x)"));
    assert_eq!(Rule::parse("Bash(rm:*)").unwrap().to_string(), "Bash(rm:*)");
    for bad in ["", "(x)", "Bash(rm", "two words", "mcp__srv__tool(x)", "Exec(x)", "read_file()", "read_file([)"] {
        assert!(Rule::parse(bad).is_err(), "{bad:?} was accepted");
    }
}

#[test]
fn claude_codes_names_of_the_file_tools_apply_to_ours_and_its_other_tools_to_nothing() {
    let applies =
        |rule: &str, tool: &str, path: &str| Rule::parse(rule).unwrap().applies(tool, &Touched::paths(vec![path.to_string()]));
    for tool in ["read_file", "ls", "glob", "grep"] {
        assert!(applies("Read(./src/**)", tool, "src/main.rs"), "Read covers {tool}");
        assert!(!applies("Read(./src/**)", tool, "docs/a.md"), "only under src: {tool}");
    }
    assert!(!applies("Read(./src/**)", "write_file", "src/main.rs"), "Read is not a write");
    for tool in ["edit_file", "write_file"] {
        assert!(applies("Edit(./src/**)", tool, "src/x.rs"), "Edit covers {tool}");
    }
    assert!(applies("Write", "write_file", "a") && !applies("Write", "edit_file", "a"));
    assert!(applies("Glob", "glob", "a") && applies("Grep", "grep", "a") && applies("LS", "ls", "a"));
    assert!(Rule::parse("Read(./src/**)").unwrap().applies_to_nothing().is_none());
    for foreign in ["WebSearch(x)", "WebSearch", "BashOutput", "Task"] {
        let why = Rule::parse(foreign).unwrap().applies_to_nothing();
        assert!(why.is_some(), "{foreign} warns");
    }
    assert!(Rule::parse("WebSearch").unwrap().applies_to_nothing().unwrap().contains("Claude Code"));
}

#[test]
fn web_fetch_rules_name_a_host_or_the_hosts_below_a_domain() {
    let applies = |rule: &str, host: &str| Rule::parse(rule).unwrap().applies("WebFetch", &Touched::host(Some(host.to_string())));
    assert!(applies("WebFetch(domain:api.example.com)", "api.example.com"));
    assert!(applies("WebFetch(domain:API.Example.com)", "api.example.com"), "hosts compare in lowercase");
    assert!(!applies("WebFetch(domain:api.example.com)", "example.com"));
    assert!(!applies("WebFetch(domain:example.com)", "evil-example.com"));
    assert!(!applies("WebFetch(domain:example.com)", "example.com.evil.net"));
    assert!(applies("WebFetch(domain:*.example.com)", "a.b.example.com"));
    assert!(!applies("WebFetch(domain:*.example.com)", "example.com"), "subdomains only");
    assert!(!applies("WebFetch(domain:*.example.com)", "notexample.com"));
    assert!(applies("WebFetch(domain:[::1])", "[::1]"));
    assert!(applies("WebFetch", "anything.example"), "the bare tool names every request");
    let nowhere = Rule::parse("WebFetch(domain:example.com)").unwrap();
    assert!(!nowhere.applies("WebFetch", &Touched::host(None)), "a request without a host matches no host rule");
    assert!(!nowhere.is_foreign() && !nowhere.applies("read_file", &Touched::host(Some("example.com".into()))));
    for bad in
        ["WebFetch(example.com)", "WebFetch(domain:)", "WebFetch(domain:*.)", "WebFetch(domain:a/b)", "WebFetch(domain:a*b)"]
    {
        let error = Rule::parse(bad).unwrap_err().to_string();
        assert!(error.contains("WebFetch(domain:example.com)"), "{bad}: {error}");
    }
    assert_eq!(Rule::exactly("WebFetch(domain:api.example.com)").as_deref(), Some("WebFetch(domain:api.example.com)"));
    assert_eq!(Rule::exactly("WebFetch(domain:*.example.com)"), None);
    let settings = layer(r#"{"webFetchPrivateHosts": ["LocalHost"]}"#);
    assert_eq!(Settings::from_layers([&settings]).web_fetch_private_hosts, vec!["localhost".to_string()]);
}

#[test]
fn allow_always_saves_a_rule_only_when_it_means_that_one_tool() {
    assert_eq!(Rule::exactly("write_file").as_deref(), Some("write_file"));
    assert_eq!(Rule::exactly("mcp__srv__add").as_deref(), Some("mcp__srv__add"));
    for name in ["mcp__srv__*", "mcp__srv", "read_file(x)", "a(b)", "mcp__srv__a)", "two words", ""] {
        assert_eq!(Rule::exactly(name), None, "{name:?}");
    }
}

#[test]
fn a_bare_rule_covers_its_tool_its_server_or_all_of_a_servers_tools() {
    let covers = |rule: &str, name: &str| Rule::parse(rule).unwrap().covers_tool(name);
    assert!(covers("write_file", "write_file"));
    assert!(!covers("write_file", "read_file"));
    assert!(covers("mcp__tickets", "mcp__tickets__create"));
    assert!(covers("mcp__tickets__*", "mcp__tickets__create"));
    assert!(covers("mcp__tickets__create", "mcp__tickets__create"));
    assert!(!covers("mcp__tickets__create", "mcp__tickets__list"));
    assert!(!covers("mcp__tick", "mcp__tickets__create"), "a prefix of a server name is another server");
    // Whatever the tool's own name, a server's rule covers it.
    for name in ["mcp__tickets__", "mcp__tickets____", "mcp__tickets__a__b", "mcp__tickets__ "] {
        assert!(covers("mcp__tickets", name) && covers("mcp__tickets__*", name), "{name}");
    }
    assert!(!covers("mcp__tickets", "mcp__ticketsx__a") && !covers("mcp__", "mcp____a"));
    assert!(!covers("write_file(/etc/*)", "write_file"), "a rule with a pattern is about some calls only");
    // An API's operations are named as a server's tools are, and a rule may name those whose
    // names start alike.
    assert!(covers("api__github", "api__github__repos_get") && covers("api__github__*", "api__github__repos_get"));
    assert!(covers("api__github__repos_*", "api__github__repos_get"));
    assert!(
        !covers("api__github__repos_*", "api__github__pulls_list") && !covers("api__github__repos_*", "api__githubx__repos_get")
    );
    assert!(!covers("api__git", "api__github__repos_get") && !covers("mcp__github", "api__github__repos_get"));
    assert!(!covers("api__*", "api__github__repos_get"), "a glob stays within one source");
    assert!(Rule::parse("api__github(x)").is_err(), "an API's rule takes no specifier");
    assert_eq!(Rule::exactly("api__github__repos_get").as_deref(), Some("api__github__repos_get"));
    assert_eq!(Rule::exactly("api__github"), None);
    assert_eq!(Rule::exactly("api__github__repos_*"), None);

    let whole = |rule: &str, server: &str| Rule::parse(rule).unwrap().covers_server(server);
    assert!(whole("mcp__tickets", "tickets") && whole("mcp__tickets__*", "tickets"));
    assert!(!whole("mcp__tickets__create", "tickets"), "one tool of a server is not the server");
    assert!(!whole("mcp__tickets", "tick") && !whole("mcp__tick", "tickets") && !whole("tickets", "tickets"));
}

#[test]
fn path_patterns_read_as_gitignore_writes_them() {
    let matches = |pattern: &str, path: &str| {
        Rule::parse(&format!("read_file({pattern})")).unwrap().applies("read_file", &Touched::paths(vec![path.to_string()]))
    };
    assert!(matches("secrets/**", "secrets/a.txt") && matches("secrets/**", "secrets/deep/b"));
    assert!(!matches("secrets/**", "public/secrets/a"), "a pattern with a slash is anchored");
    assert!(matches("secrets", "public/secrets/a"), "a bare name matches at any depth, and what is inside");
    assert!(matches("*.env", ".env") && matches("*.env", "app/prod.env") && !matches("*.env", "env.txt"));
    assert!(matches("/out/*.md", "out/r.md") && !matches("/out/*.md", "out/deep/r.md"), "* stays within a folder");
    assert!(matches("./out/**/*.md", "out/deep/r.md"));
    assert!(matches("docs/", "docs/guide.md") && !matches("docs/", "notes/docs.md"));
    assert!(!Rule::parse("read_file(secrets/**)").unwrap().applies("write_file", &Touched::paths(vec!["secrets/a".into()])));
}

#[test]
fn layers_combine_highest_first() {
    let managed =
        Layer::parse(r#"{"enableExec": false, "permissions": {"deny": ["mcp__tickets"]}}"#, Path::new("managed.json")).unwrap();
    let project = layer(
        r#"{"enableExec": true, "nonDeferredTools": ["grep"], "permissions": {"deny": ["write_file", "mcp__tickets"], "defaultMode": "acceptEdits", "disableBypassPermissionsMode": "disable"}}"#,
    );
    let user = layer(
        r#"{"nonDeferredTools": ["grep", "ls"], "model": "ignored", "hooks": {"Stop": []}, "permissions": {"defaultMode": "plan"}}"#,
    );
    let settings = Settings::from_layers([&managed, &project, &user]);
    assert!(!settings.enable_exec, "the managed layer wins");
    assert_eq!(settings.non_deferred_tools, ["grep", "ls"]);
    let deny: Vec<String> = settings.deny.iter().map(|rule| rule.value.to_string()).collect();
    assert_eq!(deny, ["mcp__tickets", "write_file"]);
    assert_eq!(settings.denying_rule("mcp__tickets__x").unwrap().source, managed.source, "the highest layer's rule is kept");
    assert_eq!(settings.enable_exec_source, Some(managed.source.clone()));
    assert!(settings.denies("mcp__tickets__create") && settings.denies("write_file") && !settings.denies("read_file"));
    assert_eq!(settings.default_mode.as_ref().map(|mode| mode.value), Some(PermissionMode::AcceptEdits));
    assert!(!settings.bypass_disabled, "only a managed layer disables bypassPermissions");
    assert_eq!(Settings::from_layers([&user]).default_mode.map(|mode| mode.value), Some(PermissionMode::Default));
    assert!(Settings::from_layers([&user]).enable_exec, "enableExec defaults to true");
    assert_eq!(Settings::from_layers([]), Settings::default());
    let managed_disable =
        Layer::from_value(serde_json::json!({"permissions": {"disableBypassPermissionsMode": "disable"}})).unwrap();
    assert!(Settings::from_layers([&managed_disable]).bypass_disabled);
}

#[test]
fn hooks_are_read_and_checked() {
    let layer = layer(
        r#"{"hooks": {"PreToolUse": [{"matcher": "write_file|mcp__fx__.*", "hooks": [{"type": "command", "command": "exit 2", "timeout": 5}]},
                                    {"matcher": "", "hooks": [{"type": "prompt", "prompt": "x"}, {"type": "command", "command": "true"}]}],
                      "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "log"}]}]}}"#,
    );
    let [first, second] = &layer.hooks.pre_tool_use[..] else { panic!("two matchers") };
    assert!(first.matches("write_file") && first.matches("mcp__fx__add") && !first.matches("read_file"));
    assert!(!first.matches("xwrite_file"), "the matcher covers the whole name");
    assert_eq!(first.hooks[0].timeout, Duration::from_secs(5));
    assert_eq!(second.hooks.len(), 1, "a hook of another type is skipped");
    assert!(second.matches("anything") && layer.hooks.post_tool_use[0].matches("anything"));
    assert_eq!(second.hooks[0].timeout, DEFAULT_HOOK_TIMEOUT);
    for (bad, needle) in [
        (r#"{"hooks": {"PreToolUse": [{"matcher": "(", "hooks": []}]}}"#, "hooks.PreToolUse[0].matcher"),
        (
            r#"{"hooks": {"PostToolUse": [{"hooks": [{"type": "command"}]}]}}"#,
            "hooks.PostToolUse[0].hooks[0]: `command` is missing",
        ),
        (r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}}"#, "timeout"),
        (r#"{"hooks": {"PreToolUse": {"matcher": "x"}}}"#, "hooks.PreToolUse: invalid type"),
        (r#"{"permissions": {"defaultMode": "yolo"}}"#, "permissions.defaultMode: unknown variant"),
        (
            r#"{"permissions": {"deny": ["mcp__fx__add(x)"]}}"#,
            "permissions.deny[0]: rule \"mcp__fx__add(x)\": a rule about a tool of an MCP server or an API takes no specifier",
        ),
    ] {
        let err = Layer::parse(bad, Path::new("h.json")).unwrap_err().to_string();
        assert!(err.contains(needle), "{bad}: {err}");
    }
}

#[test]
fn errors_name_the_file_the_key_and_the_line() {
    let place = |err: &SettingsError| (err.key.clone(), err.line, err.column);
    let err = Layer::parse("{\n  \"enableExec\": \"yes\"\n}", Path::new("project.json")).unwrap_err();
    assert!(err.to_string().starts_with("project.json: enableExec: invalid type: string \"yes\""), "{err}");
    assert_eq!(place(&err), (Some("enableExec".into()), Some(2), Some(21)), "{err}");
    assert!(err.to_string().ends_with("(line 2, column 21)"), "{err}");
    let err = Layer::parse("{\"permissions\": {\"deny\": [\"ok\",\n \"Bash(rm\"]}}", Path::new("p.json")).unwrap_err();
    assert!(err.to_string().starts_with("p.json: permissions.deny[1]: rule \"Bash(rm\""), "{err}");
    assert_eq!(place(&err), (Some("permissions.deny[1]".into()), Some(2), Some(11)), "{err}");
    // The same text earlier in the file does not mislead: the place is where the reader was.
    let twice = "{\"nonDeferredTools\": [\"x(\"],\n \"permissions\": {\"allow\": [\n\n  \"x(\"]}}";
    let err = Layer::parse(twice, Path::new("p.json")).unwrap_err();
    assert_eq!(place(&err), (Some("permissions.allow[0]".into()), Some(4), Some(7)), "{err}");
    let hooks = "{\"hooks\": {\"PreToolUse\": [\n{\"matcher\": \"x\", \"hooks\": []},\n{\"matcher\": \"(\", \"hooks\": []}]}}";
    let err = Layer::parse(hooks, Path::new("h.json")).unwrap_err();
    assert_eq!(place(&err).0.as_deref(), Some("hooks.PreToolUse[1].matcher"), "{err}");
    assert_eq!(err.line, Some(3), "{err}");
    let err = Layer::parse("{ not json", Path::new("p.json")).unwrap_err();
    assert!(err.to_string().starts_with("p.json: ") && err.line == Some(1) && err.key.is_none(), "{err}");
    let err = Layer::parse("{}\n{}", Path::new("p.json")).unwrap_err();
    assert!(err.reason.contains("trailing characters") && err.line == Some(2), "{err}");
    assert_eq!(Layer::parse("  ", Path::new("p.json")).unwrap().permissions, Permissions::default());
    let err = Layer::from_value(serde_json::json!({"enableExec": 1})).unwrap_err();
    assert!(err.to_string().contains("enableExec: invalid type"), "{err}");
    assert_eq!(place(&err), (Some("enableExec".into()), None, None), "values passed in code have no lines");
}

#[test]
fn an_unreadable_file_keeps_its_cause() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.json");
    std::fs::write(&file, "{}").unwrap();
    // A path through a file fails to open with ENOTDIR, whoever runs the test.
    let err = Layer::load(&file.join("inner.json")).unwrap_err();
    let cause = std::error::Error::source(&err).expect("the read error is kept");
    assert!(std::error::Error::source(cause).is_some(), "and the I/O error beneath it");
    let sentence = crate::support::report::error_sentence(&err);
    assert!(sentence.ends_with("the file cannot be read: Not a directory (os error 20)"), "{sentence}");
}

#[test]
fn files_are_reread_when_they_change() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project.json");
    let user = dir.path().join("user.json");
    std::fs::write(&user, r#"{"permissions": {"deny": ["grep"]}}"#).unwrap();
    let managed = layer(r#"{"nonDeferredTools": ["ls"]}"#);
    let sources = vec![
        SettingsSource::Values(Box::new(managed)),
        SettingsSource::File(project.clone()),
        SettingsSource::File(user.clone()),
    ];
    let files = SettingsFiles::new(sources);
    let first = files.current().unwrap();
    assert!(first.denies("grep") && first.enable_exec);
    assert_eq!(first.non_deferred_tools, ["ls"]);
    assert!(Arc::ptr_eq(&first, &files.current().unwrap()), "unchanged files are not read again");

    std::fs::write(&project, r#"{"enableExec": false}"#).unwrap();
    assert!(!files.current().unwrap().enable_exec, "a file that appears is read");
    std::fs::write(&project, "{ broken").unwrap();
    // Some filesystems keep modification times to the second: make the change visible.
    let later = SystemTime::now() + std::time::Duration::from_secs(2);
    std::fs::File::options().write(true).open(&project).unwrap().set_modified(later).unwrap();
    let err = files.current().unwrap_err();
    assert_eq!(err.file, project);
    assert!(!files.current_or_last_good().unwrap().enable_exec, "a broken file leaves the last valid settings in force");
    let never_valid = SettingsFiles::new(vec![SettingsSource::File(project.clone())]);
    assert_eq!(never_valid.current_or_last_good().unwrap_err().file, project, "never valid: an error, not the defaults");
    std::fs::remove_file(&project).unwrap();
    assert!(files.current().unwrap().enable_exec, "a file that disappears no longer counts");
}

#[test]
fn an_allow_rule_is_added_to_a_file_keeping_its_other_keys() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(".exec-host/settings.json");
    let files = SettingsFiles::new(vec![SettingsSource::File(file.clone())]);
    files.add_allow_rule(None, &file, "write_file").unwrap();
    assert!(files.current().unwrap().allow.iter().any(|rule| rule.value.covers_tool("write_file")));
    std::fs::write(&file, r#"{"model": "kept", "permissions": {"allow": ["ls"], "deny": ["grep"]}}"#).unwrap();
    files.add_allow_rule(None, &file, "mcp__fx__add").unwrap();
    files.add_allow_rule(None, &file, "mcp__fx__add").unwrap();
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(written, serde_json::json!({"model": "kept", "permissions": {"allow": ["ls", "mcp__fx__add"], "deny": ["grep"]}}));
    assert!(files.current().unwrap().allow.iter().any(|rule| rule.value.covers_tool("mcp__fx__add")), "seen at once");
    std::fs::write(&file, "[]").unwrap();
    assert!(files.add_allow_rule(None, &file, "x").is_err());
    // The file keeps its layout: one-line lists stay on one line, the order stays.
    let written = "{\n  \"permissions\": { \"deny\": [\"grep\"], \"allow\": [\"ls\", \"glob\"] },\n  \"model\": \"kept\"\n}\n";
    std::fs::write(&file, written).unwrap();
    files.add_allow_rule(None, &file, "write_file").unwrap();
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "{\n  \"permissions\": { \"deny\": [\"grep\"], \"allow\": [\"ls\", \"glob\", \"write_file\"] },\n  \"model\": \"kept\"\n}\n"
    );
    // A file of only whitespace reads as no settings; JSON does not allow all of it (a form
    // feed), so the saved file starts afresh rather than keeping it.
    for blank in ["", "\n", "\u{c}", " \u{a0}\t"] {
        std::fs::write(&file, blank).unwrap();
        files.add_allow_rule(None, &file, "ls").unwrap();
        assert!(files.current().unwrap().allow.iter().any(|rule| rule.value.covers_tool("ls")), "{blank:?}");
    }
    for (text, why) in
        [("{\"permissions\": []}", "`permissions` is not an object"), ("{\"permissions\": {\"allow\": 1}}", "not a list")]
    {
        std::fs::write(&file, text).unwrap();
        let refused = files.add_allow_rule(None, &file, "x").unwrap_err();
        assert!(refused.to_string().contains(why), "{refused}");
    }
}

/// Saved relative to a folder's handle, a rule never goes through a link: not a folder
/// that leads outside, not a link at the file's place, not one at the temporary name.
#[test]
fn an_allow_rule_is_never_saved_through_a_link() {
    let root = tempfile::tempdir().unwrap();
    let (ws, outside) = (root.path().join("ws"), root.path().join("outside"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let dir = Dir::open_ambient_dir(&ws, cap_std::ambient_authority()).unwrap();
    let relative = Path::new(".exec-host/settings.json");
    let files = SettingsFiles::new(vec![SettingsSource::File(ws.join(relative))]);
    let listed = |dir: &Path| std::fs::read_dir(dir).unwrap().count();

    std::os::unix::fs::symlink(&outside, ws.join(".exec-host")).unwrap();
    let refused = files.add_allow_rule(Some(&dir), relative, "write_file").unwrap_err();
    assert!(refused.reason.contains("without following a link"), "{refused}");
    assert_eq!(listed(&outside), 0);

    std::fs::remove_file(ws.join(".exec-host")).unwrap();
    std::fs::create_dir(ws.join(".exec-host")).unwrap();
    std::os::unix::fs::symlink(outside.join("settings.json"), ws.join(relative)).unwrap();
    let refused = files.add_allow_rule(Some(&dir), relative, "write_file").unwrap_err();
    assert!(refused.reason.contains("is a link"), "{refused}");
    std::fs::remove_file(ws.join(relative)).unwrap();

    let temporary = ws.join(format!(".exec-host/.settings.json.{}.tmp", std::process::id()));
    std::os::unix::fs::symlink(outside.join("planted"), &temporary).unwrap();
    assert!(files.add_allow_rule(Some(&dir), relative, "write_file").is_err());
    assert_eq!(listed(&outside), 0, "nothing was written outside");
    std::fs::remove_file(&temporary).unwrap();

    files.add_allow_rule(Some(&dir), relative, "write_file").unwrap();
    assert!(files.current().unwrap().allow.iter().any(|rule| rule.value.covers_tool("write_file")));
}

#[test]
fn a_source_is_named_by_its_role_never_by_its_place_on_the_host() {
    let named = |path: &Path| Source::File(path.to_path_buf()).to_string();
    assert_eq!(named(Path::new(MANAGED_FILE)), "the managed settings file");
    assert_eq!(named(&Path::new("/home/someone/project").join(PROJECT_FILE)), "the project settings (.exec-host/settings.json)");
    if let Some(user) = user_file() {
        assert_eq!(named(&user), "the user settings");
    }
    assert_eq!(named(Path::new("/home/someone/project/deny.json")), "the settings file `deny.json`");
    assert_eq!(Source::File("/srv/deny.json".into()).path(), Some(Path::new("/srv/deny.json")), "the operator keeps the path");
    assert_eq!(Source::CommandLine.to_string(), "the command line");
}
