//! The MCP client set-ups of `examples/clients/`, which the guide's clients chapter shows:
//! each file is read as its client reads it (where it looks for servers, the variables it
//! expands, the folder it starts them in), what it names is started, and an MCP client
//! runs an Exec through it that reads the project's files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

use crate::common::shared_cache;

/// How a client starts a stdio server: its command, arguments, environment and folder.
#[derive(Debug)]
struct Launch {
    command: String,
    args: Vec<String>,
    env: BTreeMap<String, String>,
    cwd: PathBuf,
}

/// A project of one file, and a folder with `exec-host` in it, as a user's PATH has.
struct Machine {
    project: tempfile::TempDir,
    bin: tempfile::TempDir,
}

impl Machine {
    fn new() -> Self {
        let project = tempfile::tempdir().unwrap();
        std::fs::write(project.path().join("hello.txt"), "hello from the project\n").unwrap();
        let bin = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_exec-host"), bin.path().join("exec-host")).unwrap();
        Machine { project, bin }
    }

    /// The placeholders the guide tells a user to replace in a file of their home folder.
    fn own_paths(&self, text: &str) -> String {
        text.replace("/home/you/.cargo/bin/exec-host", self.bin.path().join("exec-host").to_str().unwrap())
            .replace("/home/you/project", self.project.path().to_str().unwrap())
    }

    /// Starts what `launch` names, as the client would, and runs an Exec through it.
    async fn exec_through(&self, client: &str, launch: Launch) {
        let mut command = tokio::process::Command::new(&launch.command);
        // Found on the PATH the client passes on; nothing else of this process's environment
        // but what the binary needs to find its compiled-guest cache and home.
        let path = format!("{}:{}", self.bin.path().display(), std::env::var("PATH").unwrap_or_default());
        command
            .args(&launch.args)
            .envs(&launch.env)
            .env("PATH", path)
            .env("EXEC_HOST_CACHE_DIR", shared_cache())
            .env("XDG_STATE_HOME", self.bin.path().join("state"))
            .env("XDG_CONFIG_HOME", self.bin.path().join("config"))
            .current_dir(&launch.cwd);
        let transport = TokioChildProcess::new(command).unwrap_or_else(|e| panic!("{client}: {launch:?} starts: {e}"));
        let service = match tokio::time::timeout(Duration::from_secs(60), ().serve(transport)).await {
            Ok(Ok(service)) => service,
            Ok(Err(error)) => panic!("{client}: {launch:?} initializes: {error}"),
            Err(_) => panic!("{client}: initialize in time"),
        };
        let tools = service.list_all_tools().await.unwrap();
        assert!(tools.iter().any(|tool| tool.name == "Exec"), "{client}: {tools:?}");
        let code = "return (await tools.read_file({ path: 'hello.txt' })).content";
        let params = CallToolRequestParams::new("Exec").with_arguments(json!({ "code": code }).as_object().unwrap().clone());
        let result = tokio::time::timeout(Duration::from_secs(60), service.call_tool(params)).await.unwrap().unwrap();
        let text: String = result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect();
        assert_eq!(result.is_error, Some(false), "{client}: {text}");
        assert!(text.contains("hello from the project"), "{client}: the workspace is the project: {text}");
        service.cancel().await.unwrap();
    }
}

fn example(path: &str) -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/clients").join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// The `exec-host` entry of a JSON file whose servers are under `key`.
fn json_entry(text: &str, key: &str) -> Value {
    let config: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("JSON: {e}"));
    let servers = config[key].as_object().unwrap_or_else(|| panic!("the servers are under {key:?}: {config}"));
    assert_eq!(servers.len(), 1, "one server: {config}");
    servers["exec-host"].clone()
}

/// A launch from a JSON entry (`command`, `args`, `env`), each string passed through
/// `expand` as the client expands its variables, started in `cwd`.
fn json_launch(entry: &Value, cwd: &Path, expand: impl Fn(&str) -> String) -> Launch {
    let text = |value: &Value| expand(value.as_str().unwrap_or_else(|| panic!("a string: {value}")));
    Launch {
        command: text(&entry["command"]),
        args: entry["args"].as_array().map(|args| args.iter().map(text).collect()).unwrap_or_default(),
        env: entry["env"].as_object().map(|env| env.iter().map(|(k, v)| (k.clone(), text(v))).collect()).unwrap_or_default(),
        cwd: cwd.to_path_buf(),
    }
}

#[tokio::test]
async fn claude_desktop_starts_the_configured_absolute_command_from_no_particular_folder() {
    let machine = Machine::new();
    // Claude Desktop reads claude_desktop_config.json, expands nothing and names no folder.
    let entry = json_entry(&machine.own_paths(&example("claude_desktop_config.json")), "mcpServers");
    let launch = json_launch(&entry, Path::new("/"), str::to_string);
    assert!(Path::new(&launch.command).is_absolute(), "it does not search the shell's PATH: {launch:?}");
    machine.exec_through("Claude Desktop", launch).await;
}

#[tokio::test]
async fn claude_code_starts_the_project_s_mcp_json_in_the_project_and_claude_mcp_add_writes_the_same() {
    let machine = Machine::new();
    let text = example("claude-code/.mcp.json");
    let entry = json_entry(&text, "mcpServers");
    assert_eq!(entry["type"], "stdio");
    // Claude Code expands ${VAR} and ${VAR:-default} from its environment; starts the
    // project's servers in the project.
    let expand = |value: &str| {
        assert!(!value.contains("${"), "no variable is used, so none needs expanding: {value}");
        value.to_string()
    };
    machine.exec_through("Claude Code", json_launch(&entry, machine.project.path(), expand)).await;

    // `claude mcp add --scope project NAME -- COMMAND ARGS...` writes this entry.
    let added = example("claude-code/add.sh");
    let words: Vec<&str> = added.split_whitespace().collect();
    assert_eq!(&words[..6], ["claude", "mcp", "add", "--scope", "project", "exec-host"], "{added}");
    let (_, command) = added.split_once(" -- ").expect("the command after --");
    let mut command = command.split_whitespace();
    assert_eq!(command.next(), entry["command"].as_str());
    assert_eq!(command.map(|arg| json!(arg)).collect::<Vec<_>>(), entry["args"].as_array().unwrap().clone());
}

#[tokio::test]
async fn cursor_expands_the_workspace_folder_in_the_project_s_cursor_mcp_json() {
    let machine = Machine::new();
    let entry = json_entry(&example("cursor/.cursor/mcp.json"), "mcpServers");
    // Cursor expands ${workspaceFolder}, ${userHome} and ${env:NAME}.
    let project = machine.project.path().to_str().unwrap().to_string();
    let expand = |value: &str| value.replace("${workspaceFolder}", &project);
    let launch = json_launch(&entry, Path::new("/"), expand);
    assert!(launch.args.contains(&project), "the workspace is the project whatever folder Cursor starts it in: {launch:?}");
    machine.exec_through("Cursor", launch).await;
}

#[tokio::test]
async fn vs_code_reads_servers_not_mcp_servers_from_vscode_mcp_json() {
    let machine = Machine::new();
    let text = example("vscode/.vscode/mcp.json");
    let config: Value = serde_json::from_str(&text).unwrap();
    assert!(config.get("mcpServers").is_none(), "VS Code's key is `servers`: {config}");
    let entry = json_entry(&text, "servers");
    assert_eq!(entry["type"], "stdio");
    let project = machine.project.path().to_str().unwrap().to_string();
    let expand = |value: &str| value.replace("${workspaceFolder}", &project);
    machine.exec_through("VS Code", json_launch(&entry, Path::new("/"), expand)).await;
}

#[tokio::test]
async fn codex_reads_its_mcp_servers_table_from_config_toml() {
    let machine = Machine::new();
    let config: toml::Table = machine.own_paths(&example("codex/config.toml")).parse().expect("TOML");
    let entry = config["mcp_servers"]["exec-host"].as_table().expect("[mcp_servers.exec-host]");
    let strings = |value: Option<&toml::Value>| -> Vec<String> {
        value
            .and_then(toml::Value::as_array)
            .map(|list| list.iter().map(|v| v.as_str().unwrap().to_string()).collect())
            .unwrap_or_default()
    };
    let env = entry
        .get("env")
        .and_then(toml::Value::as_table)
        .map(|env| env.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string())).collect());
    let launch = Launch {
        command: entry["command"].as_str().unwrap().to_string(),
        args: strings(entry.get("args")),
        env: env.unwrap_or_default(),
        // Codex starts a server in the folder it runs in, or in `cwd` when the entry sets one.
        cwd: entry.get("cwd").and_then(toml::Value::as_str).map_or_else(|| PathBuf::from("/"), PathBuf::from),
    };
    assert!(entry["tool_timeout_sec"].as_integer().is_some_and(|seconds| seconds >= 300), "{entry:?}");
    machine.exec_through("Codex", launch).await;
}
