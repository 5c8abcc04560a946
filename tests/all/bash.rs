//! The `Bash` tool: Claude Code's permission rules as written, checked part by part, through
//! the real guest and host; and each layer of a command's confinement shown to stop, on its
//! own, an attack that the others let through (`exec_host::command::run` with one layer).

use std::sync::Arc;
use std::time::{Duration, Instant};

use exec_host::command::{self, Confinement, Ended, Layers};
use exec_host::settings::{Layer, PermissionMode, Settings};
use exec_host::{Approval, CallOptions, CancellationToken, json};
use exec_host_tests::{Harness, SharedApprover, TestApprover, within};
use serde_json::Value;

/// A harness whose managed settings are `settings` plus `enableBash`, in mode `mode`.
async fn harness(settings: Value, mode: PermissionMode, approver: &Arc<TestApprover>) -> Harness {
    let mut settings = settings;
    settings["enableBash"] = json!(true);
    let layer = Layer::from_value(settings).unwrap();
    let approver = Arc::new(SharedApprover(approver.clone()));
    Harness::with(|builder| builder.managed_settings(layer).approver(approver).permission_mode(mode)).await
}

fn bash(command: &str) -> String {
    format!("tools.Bash({{ command: {} }})", json!(command))
}

#[tokio::test]
async fn bash_rules_apply_as_claude_code_s_and_a_command_is_checked_part_by_part() {
    use PermissionMode::*;
    // (settings, mode, command, expected: "ok" (ran unasked), "asked" (and ran), or a refusal's start)
    let cases: Vec<(Value, PermissionMode, &str, &str)> = vec![
        (json!({"permissions": {"allow": ["Bash(git status:*)"]}}), Default, "git status", "ok"),
        (json!({"permissions": {"allow": ["Bash(git status:*)"]}}), Default, "git status --short", "ok"),
        (json!({"permissions": {"allow": ["Bash(git status:*)"]}}), Default, "git status && touch x", "asked"),
        (json!({"permissions": {"allow": ["Bash(git status:*)", "Bash(touch x)"]}}), Default, "git status && touch x", "ok"),
        (json!({"permissions": {"allow": ["Bash(echo:*)"]}}), Default, "echo $(touch y)", "asked"),
        // Arithmetic of numbers runs nothing; of a variable, it evaluates the variable's value.
        (json!({"permissions": {"allow": ["Bash(echo:*)"]}}), Default, "echo probe-$((6*7))", "ok"),
        (json!({"permissions": {"allow": ["Bash(echo:*)"]}}), Default, "x='a[$(touch y)]'; echo $((x))", "asked"),
        (json!({"permissions": {"allow": ["Bash(npm run test:*)"]}}), Default, "npm run testing", "asked"),
        (json!({"permissions": {"allow": ["Bash(git status)"]}}), Default, "git status -s", "asked"),
        (json!({"permissions": {"allow": ["Bash"]}}), Default, "echo anything | wc -c", "ok"),
        (
            json!({"permissions": {"deny": ["Bash(rm:*)"], "allow": ["Bash"]}}),
            Default,
            "echo hi; rm -rf x",
            "`Bash` is denied by the permissions.deny rule `Bash(rm:*)`",
        ),
        (
            json!({"permissions": {"deny": ["Bash(rm:*)"], "allow": ["Bash"]}}),
            Default,
            "echo $(rm -rf x)",
            "`Bash` is denied by the permissions.deny rule `Bash(rm:*)`",
        ),
        (json!({"permissions": {"ask": ["Bash(echo hi)"], "allow": ["Bash"]}}), Default, "true && echo hi", "asked"),
        (json!({}), Default, "true", "asked"),
        (json!({}), AcceptEdits, "true", "asked"),
        (json!({}), DontAsk, "true", "`Bash` was not run: it needs approval (the permission mode dontAsk"),
        (json!({"permissions": {"allow": ["Bash(git status:*)"]}}), DontAsk, "git status; true", "`Bash` was not run"),
        (json!({}), BypassPermissions, "true", "ok"),
        // Off unless the settings turn it on: not in the pool at all.
        (json!({"enableBash": false}), BypassPermissions, "true", "tools.Bash is not a function"),
    ];
    for (settings, mode, command, expected) in cases {
        let approver = TestApprover::new(|_| Approval::AllowOnce);
        let mut harness_settings = settings.clone();
        let off = settings.get("enableBash") == Some(&json!(false));
        let harness = if off {
            let layer = Layer::from_value(harness_settings.take()).unwrap();
            let approver = Arc::new(SharedApprover(approver.clone()));
            Harness::with(|builder| builder.managed_settings(layer).approver(approver).permission_mode(mode)).await
        } else {
            harness(harness_settings, mode, &approver).await
        };
        let got = harness.attempt(&bash(command)).await;
        let asked = !approver.tools().is_empty();
        match expected {
            "asked" => assert!(asked && got == "ok", "{settings} {mode} {command}: {got}, asked {asked}"),
            "ok" => assert!(!asked && got == "ok", "{settings} {mode} {command}: {got}, asked {asked}"),
            refusal => assert!(!asked && got.starts_with(refusal), "{settings} {mode} {command}: {got}"),
        }
    }
}

#[tokio::test]
async fn allow_always_allows_the_exact_commands_asked_and_saves_them_as_rules() {
    let approver = TestApprover::new(|_| Approval::AllowAlways);
    let harness = harness(json!({}), PermissionMode::Default, &approver).await;
    assert_eq!(harness.attempt(&bash("echo one && echo two")).await, "ok");
    assert_eq!(approver.tools().len(), 1);
    assert_eq!(harness.attempt(&bash("echo two")).await, "ok");
    assert_eq!(approver.tools().len(), 1, "a part allowed always runs unasked");
    assert_eq!(harness.attempt(&bash("echo three")).await, "ok");
    assert_eq!(approver.tools().len(), 2, "another command asks: `allow always` never allowed the whole shell");
    let saved = std::fs::read_to_string(harness.dir.path().join(".exec-host/settings.json")).unwrap();
    for rule in ["Bash(echo one)", "Bash(echo two)", "Bash(echo three)"] {
        assert!(saved.contains(rule), "{rule} in {saved}");
    }
}

#[test]
fn a_managed_enable_bash_false_wins_over_every_other_layer() {
    let managed = Layer::from_value(json!({"enableBash": false})).unwrap();
    let project = Layer::from_value(json!({"enableBash": true})).unwrap();
    assert!(!Settings::from_layers([&managed, &project]).enable_bash);
    assert!(Settings::from_layers([&project]).enable_bash);
    assert!(!Settings::from_layers([]).enable_bash, "off unless turned on");
}

#[tokio::test]
async fn a_command_s_output_exit_code_and_lines_reach_the_script_and_the_progress_watcher() {
    let approver = TestApprover::new(|_| Approval::AllowOnce);
    let harness = harness(json!({"permissions": {"allow": ["Bash"]}}), PermissionMode::Default, &approver).await;
    let steps = Arc::new(std::sync::Mutex::new(Vec::<(String, String)>::new()));
    let seen = steps.clone();
    let options = CallOptions::default().on_tool_progress(move |step| {
        seen.lock().unwrap().push((step.tool.clone(), step.step.message.clone().unwrap_or_default()))
    });
    let code = "return await tools.Bash({ command: 'echo one; echo two >&2; pwd; exit 3' })";
    let outcome = within(30, harness.run_options(code, options)).await;
    assert!(outcome.ok(), "{}", outcome.text());
    let value = outcome.value().unwrap();
    let workspace = std::fs::canonicalize(harness.dir.path()).unwrap();
    assert_eq!(value["output"], format!("one\ntwo\n{}\n", workspace.display()), "{value}");
    assert_eq!(value["exitCode"], 3, "a non-zero exit is a result: {value}");
    let steps = steps.lock().unwrap().clone();
    let lines: Vec<&str> = steps.iter().map(|(_, line)| line.as_str()).collect();
    assert_eq!(&lines[..2], ["one", "two"], "{steps:?}");
    assert!(steps.iter().all(|(tool, _)| tool == "Bash"), "{steps:?}");

    let stopped = harness.attempt("tools.Bash({ command: 'echo started; sleep 30', timeout: 300 })").await;
    assert!(stopped.starts_with("Bash: the command did not finish: it ran out of its time (300 ms)"), "{stopped}");
    assert!(stopped.contains("started"), "what it printed is kept: {stopped}");
}

/// A workspace with a `.git` folder, and a folder outside it, beside it.
struct Place {
    _folders: [tempfile::TempDir; 2],
    workspace: std::path::PathBuf,
    outside: std::path::PathBuf,
}

impl Place {
    fn new() -> Self {
        Place::in_folder(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")))
    }

    /// The workspace and the folder outside it made in `base`, side by side.
    fn in_folder(base: &std::path::Path) -> Self {
        let made = || tempfile::Builder::new().prefix("exec-host-").tempdir_in(base).unwrap();
        let folders = [made(), made()];
        let (workspace, outside) = (folders[0].path().canonicalize().unwrap(), folders[1].path().canonicalize().unwrap());
        std::fs::create_dir_all(workspace.join(".git/hooks")).unwrap();
        Place { _folders: folders, workspace, outside }
    }

    fn confinement(&self, layers: Layers) -> Confinement {
        let mut confinement = Confinement::new(&self.workspace, layers);
        confinement.read_only = vec![self.workspace.join(".git")];
        confinement
    }

    async fn run(&self, layers: Layers, command: &str) -> command::CommandOutcome {
        let confinement = self.confinement(layers);
        let cancel = CancellationToken::new();
        let outcome = command::run(command, &confinement, Duration::from_secs(20), &cancel, &|_| {});
        within(30, outcome).await.unwrap()
    }
}

#[tokio::test]
async fn landlock_alone_keeps_writes_and_reads_in_the_workspace() {
    let place = Place::new();
    std::fs::write(place.outside.join("secret"), "s").unwrap();
    let attack = format!("echo x > {0}/planted; cat {0}/secret", place.outside.display());
    let stopped = place.run(Layers::only("landlock"), &attack).await;
    assert!(stopped.output.contains("Permission denied"), "{stopped:?}");
    assert!(!place.outside.join("planted").exists());
    let open = place.run(Layers::only("limits"), &attack).await;
    assert_eq!(open.output, "s", "without Landlock the attack works: {open:?}");
    // A link out of the workspace leads nowhere either.
    std::os::unix::fs::symlink(&place.outside, place.workspace.join("out")).unwrap();
    let through_link = place.run(Layers::only("landlock"), "echo x > out/via-link; cat out/secret").await;
    assert!(through_link.output.contains("Permission denied"), "{through_link:?}");
    assert!(!place.outside.join("via-link").exists());
}

/// Where agents make workspaces: under `/tmp`, under the home folder, and one level below `/`.
fn workspace_bases() -> Vec<std::path::PathBuf> {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from).expect("HOME is set");
    vec!["/tmp".into(), home, "/".into()]
}

#[tokio::test]
async fn a_workspace_under_tmp_home_or_the_root_reaches_none_of_its_neighbours_whatever_layer_stands_alone() {
    for base in workspace_bases() {
        let place = Place::in_folder(&base);
        std::fs::write(place.outside.join("SECRET.txt"), "s3cret").unwrap();
        let outside_name = place.outside.file_name().unwrap().to_str().unwrap();
        let escape = place.workspace.parent().unwrap().join(format!("{outside_name}-escape.txt"));
        let attacks = [
            format!("echo x > ../{outside_name}-escape.txt; cat ../{outside_name}/SECRET.txt"),
            format!("echo x > {}; cat {}/SECRET.txt", escape.display(), place.outside.display()),
            format!("cd ..; echo x > {outside_name}-escape.txt; cat {outside_name}/SECRET.txt; ls"),
        ];
        // Landlock stands between the command and the folders beside the workspace wherever
        // it lies; the namespaces do too under `/tmp`, whose private copy holds only the
        // workspace.
        let mut layers = vec![Layers::default(), Layers::only("landlock")];
        if base == std::path::Path::new("/tmp") {
            layers.push(Layers::only("namespaces"));
        }
        for layers in layers {
            for attack in &attacks {
                let stopped = place.run(layers, attack).await;
                let at = format!("{layers:?} in {}: {attack}: {stopped:?}", base.display());
                assert!(!stopped.output.contains("s3cret"), "{at}");
                assert!(
                    !stopped.output.lines().any(|line| line == outside_name),
                    "the folder beside it is not even listed: {at}"
                );
                assert!(!escape.exists(), "{at}");
            }
        }
        let open = place.run(Layers::only("limits"), &attacks[0]).await;
        assert_eq!(open.output, "s3cret", "without Landlock the attack works: {open:?}");
        std::fs::remove_file(&escape).unwrap();
    }
}

#[tokio::test]
async fn a_workspace_under_tmp_is_where_the_command_sees_it_and_git_works_there() {
    let place = Place::in_folder(std::path::Path::new("/tmp"));
    std::fs::remove_dir_all(place.workspace.join(".git")).unwrap();
    let init = std::process::Command::new("git").arg("init").arg("-q").current_dir(&place.workspace).status().unwrap();
    assert!(init.success());
    std::fs::write(place.workspace.join("a.txt"), "in the workspace").unwrap();
    let command = format!("cat \"$PWD/a.txt\"; echo; cat {}/a.txt; echo; git status --porcelain; pwd", place.workspace.display());
    let seen = place.run(Layers::default(), &command).await;
    let expected = format!("in the workspace\nin the workspace\n?? a.txt\n{}\n", place.workspace.display());
    assert_eq!((seen.exit_code, seen.output.as_str()), (Some(0), expected.as_str()), "{seen:?}");
    // Its /tmp is still its own, and what it writes there is gone with it.
    let tmp = place.run(Layers::default(), "echo kept > /tmp/own && cat /tmp/own && ls /tmp | wc -l").await;
    assert_eq!(tmp.output, "kept\n2\n", "{tmp:?}");
    assert!(!std::path::Path::new("/tmp/own").exists());
}

#[tokio::test]
async fn where_the_host_and_other_services_keep_their_state_is_out_of_a_command_s_reach() {
    // As a deployment keeps them: the state key and the OAuth tokens under `/var/lib`, a
    // mounted secret under `/run`.
    let place = Place::new();
    for base in ["/var/lib", "/run"] {
        let kept = tempfile::Builder::new().prefix("exec-host-").tempdir_in(base).expect("the test runs as root, as CI does");
        std::fs::write(kept.path().join("state.key"), "s3cret").unwrap();
        let attack = format!("cat {0}/state.key; ls {0}", kept.path().display());
        for layers in [Layers::default(), Layers::only("landlock")] {
            let stopped = place.run(layers, &attack).await;
            assert!(!stopped.output.contains("s3cret") && !stopped.output.contains("state.key\n"), "{layers:?}: {stopped:?}");
            assert!(stopped.output.contains("Permission denied"), "{layers:?}: {stopped:?}");
        }
        let open = place.run(Layers::only("limits"), &attack).await;
        assert!(open.output.starts_with("s3cret"), "without Landlock the attack works: {open:?}");
    }
}

#[tokio::test]
async fn descriptors_the_host_inherited_do_not_reach_a_command() {
    use std::os::fd::AsRawFd;
    let place = Place::new();
    std::fs::write(place.outside.join("secret"), "s3cret").unwrap();
    let written = std::fs::File::create(place.outside.join("written")).unwrap();
    let read = std::fs::File::open(place.outside.join("secret")).unwrap();
    // As a parent process or a shell redirection leaves them: open across exec, at numbers
    // no other test uses.
    let inherited = |file: &std::fs::File| {
        // SAFETY: F_DUPFD on a descriptor this test owns; the copy is left open for the test.
        let fd = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_DUPFD, 600) };
        assert!(fd >= 600);
        fd
    };
    let (write_fd, read_fd) = (inherited(&written), inherited(&read));
    let attack = format!("echo x >&{write_fd}; cat <&{read_fd}; ls /proc/self/fd | tr '\\n' ' '");
    for layers in [Layers::default(), Layers::only("landlock"), Layers::only("namespaces")] {
        let stopped = place.run(layers, &attack).await;
        assert!(!stopped.output.contains("s3cret"), "{layers:?}: {stopped:?}");
        assert!(stopped.output.contains("Bad file descriptor"), "{layers:?}: {stopped:?}");
        // `ls` sees its standard three and the folder it reads: nothing of the host's. (Its
        // own `/proc` is the namespaces'; Landlock alone keeps the host's out of reach.)
        if layers.namespaces {
            assert!(stopped.output.ends_with("0 1 2 3 "), "{layers:?}: {stopped:?}");
        }
        assert_eq!(std::fs::read(place.outside.join("written")).unwrap(), b"", "{layers:?}");
    }
    // SAFETY: closing the copies made above.
    unsafe { (libc::close(write_fd), libc::close(read_fd)) };
}

#[tokio::test]
async fn the_init_a_command_sees_as_pid_1_carries_nothing_of_the_host() {
    let place = Place::new();
    let look = "tr -d '\\000' < /proc/1/cmdline; echo; cat /proc/1/comm; cat /proc/1/environ; ls -l /proc/1/exe; cat /proc/1/mem | wc -c";
    for layers in [Layers::default(), Layers::only("namespaces")] {
        let seen = place.run(layers, look).await;
        let at = format!("{layers:?}: {seen:?}");
        let this = std::env::current_exe().unwrap();
        let name = this.file_name().unwrap().to_str().unwrap();
        assert!(!seen.output.contains(name), "the host's command line: {at}");
        assert!(!seen.output.contains("CARGO") && !seen.output.contains("PATH="), "the host's environment: {at}");
        assert!(seen.output.starts_with("\ninit\n"), "{at}");
        assert!(seen.output.contains("/proc/1/environ: Permission denied"), "{at}");
        assert!(seen.output.contains("/proc/1/mem: Permission denied"), "{at}");
    }
}

#[tokio::test]
async fn the_mount_namespace_alone_keeps_git_read_only_and_the_pid_namespace_ends_daemons() {
    let place = Place::new();
    let attack = "echo evil > .git/hooks/pre-commit";
    let stopped = place.run(Layers::only("namespaces"), attack).await;
    assert!(stopped.output.contains("Read-only file system"), "{stopped:?}");
    assert!(!place.workspace.join(".git/hooks/pre-commit").exists());
    let open = place.run(Layers::only("landlock"), attack).await;
    assert_eq!(open.exit_code, Some(0), "Landlock cannot take .git out of a writable workspace: {open:?}");
    std::fs::remove_file(place.workspace.join(".git/hooks/pre-commit")).unwrap();

    // A daemon that left the group and the session, forked twice.
    let daemon = "(setsid sh -c 'sleep 1; touch late' > /dev/null 2>&1 &); echo started";
    let ended = place.run(Layers::only("namespaces"), daemon).await;
    let survived = place.run(Layers::only("landlock"), &daemon.replace("late", "late-open")).await;
    assert_eq!((ended.exit_code, survived.exit_code), (Some(0), Some(0)));
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!place.workspace.join("late").exists(), "the PID namespace ended it with the command");
    assert!(place.workspace.join("late-open").exists(), "without it, the daemon outlives its call");
}

#[tokio::test]
async fn every_layer_alone_keeps_the_network_closed_and_seccomp_refuses_new_namespaces() {
    let place = Place::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    for layer in ["seccomp", "namespaces", "landlock"] {
        let stopped = place.run(Layers::only(layer), &connect).await;
        assert!(!stopped.output.contains("connected"), "{layer}: {stopped:?}");
    }
    let open = place.run(Layers::only("limits"), &connect).await;
    assert!(open.output.contains("connected"), "with no layer against it the attack works: {open:?}");

    let unshare = "unshare -U true && echo unshared";
    let stopped = place.run(Layers::only("seccomp"), unshare).await;
    assert!(stopped.output.contains("Operation not permitted") && !stopped.output.contains("unshared"), "{stopped:?}");
    let open = place.run(Layers::only("limits"), unshare).await;
    assert!(open.output.contains("unshared"), "{open:?}");
}

#[tokio::test]
async fn limits_alone_bound_file_size_and_processes() {
    let place = Place::new();
    let mut confinement = place.confinement(Layers::only("limits"));
    confinement.limits.file_size = 1 << 20;
    let big = "head -c 2000000 /dev/zero > big; echo $?";
    let cancel = CancellationToken::new();
    let stopped = command::run(big, &confinement, Duration::from_secs(20), &cancel, &|_| {}).await.unwrap();
    assert!(stopped.output.contains("File size limit exceeded"), "{stopped:?}");
    assert_eq!(std::fs::metadata(place.workspace.join("big")).unwrap().len(), 1 << 20);
    let open = place.run(Layers::only("landlock"), big).await;
    assert_eq!(open.output, "0\n", "{open:?}");

    // A fork bomb, with every layer (processes are counted in the command's own user
    // namespace, so the bound holds for root too): it is stopped, and the host goes on.
    let mut confinement = place.confinement(Layers::default());
    confinement.limits.processes = 32;
    // The shell then becomes `sleep` (no fork needed) while the bomb meets its bound.
    let bomb = "bomb() { bomb | bomb & }; bomb; exec sleep 2";
    let started = Instant::now();
    let stopped = command::run(bomb, &confinement, Duration::from_secs(10), &cancel, &|_| {}).await.unwrap();
    assert!(stopped.output.contains("Resource temporarily unavailable"), "{stopped:?}");
    assert_eq!((stopped.ended, stopped.exit_code), (Ended::Exited, Some(0)), "{stopped:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
}

#[tokio::test]
async fn a_timeout_stops_a_command_and_one_that_ignores_sigterm_is_killed_after_the_grace() {
    let place = Place::new();
    let confinement = place.confinement(Layers::default());
    let cancel = CancellationToken::new();
    let short = Duration::from_millis(300);
    let started = Instant::now();
    let polite = command::run("sleep 30", &confinement, short, &cancel, &|_| {}).await.unwrap();
    assert_eq!(polite.ended, Ended::TimedOut);
    assert_eq!((polite.exit_code, polite.signal), (None, Some(libc::SIGTERM)), "{polite:?}");
    assert!(started.elapsed() < command::GRACE, "SIGTERM reached it through the init: {:?}", started.elapsed());
    let started = Instant::now();
    let stubborn = command::run("trap '' TERM; sleep 30", &confinement, short, &cancel, &|_| {}).await.unwrap();
    assert_eq!(stubborn.ended, Ended::TimedOut);
    assert!(started.elapsed() >= command::GRACE && started.elapsed() < command::GRACE * 3, "{:?}", started.elapsed());

    // An abort kills at once.
    let abort = CancellationToken::new();
    let later = abort.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        later.cancel();
    });
    let started = Instant::now();
    let aborted = command::run("trap '' TERM; sleep 30", &confinement, Duration::from_secs(60), &abort, &|_| {}).await.unwrap();
    assert_eq!(aborted.ended, Ended::Aborted);
    assert_eq!((aborted.exit_code, aborted.signal), (None, Some(libc::SIGKILL)), "{aborted:?}");
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
}

/// How a command ended reaches the host as it was: its exit code, or the signal that ended
/// it, though the process the host waits on is the init of its namespaces (which cannot
/// die of a signal it sends itself); the same with every layer and with none.
#[tokio::test]
async fn a_command_s_exit_code_or_the_signal_that_ended_it_is_reported_with_every_layer_and_with_none() {
    let place = Place::new();
    let cancel = CancellationToken::new();
    for layers in [Layers::default(), Layers::only("none")] {
        let confinement = place.confinement(layers);
        let second = Duration::from_secs(10);
        let exited = command::run("echo out; echo err >&2; exit 7", &confinement, second, &cancel, &|_| {}).await.unwrap();
        assert_eq!((exited.exit_code, exited.signal, exited.output.as_str()), (Some(7), None, "out\nerr\n"), "{layers:?}");
        let killed = command::run("kill -SEGV $$", &confinement, second, &cancel, &|_| {}).await.unwrap();
        assert_eq!((killed.exit_code, killed.signal), (None, Some(libc::SIGSEGV)), "{layers:?}: {killed:?}");
        let nul = command::run("echo a\0b", &confinement, second, &cancel, &|_| {}).await;
        assert!(matches!(&nul, Err(command::CommandError::Spawn(e)) if e.to_string().contains("NUL")), "{layers:?}: {nul:?}");
        let environment = command::run("echo $HOME $TMPDIR; pwd", &confinement, second, &cancel, &|_| {}).await.unwrap();
        let workspace = std::fs::canonicalize(&confinement.workspace).unwrap();
        assert_eq!(environment.output, format!("/tmp /tmp\n{}\n", workspace.display()), "{layers:?}");
    }
}

/// With the clock paused, time jumps to each timer while the command runs (its real
/// milliseconds are hours on the paused clock): every heartbeat arrives, 30 seconds apart.
#[tokio::test(start_paused = true)]
async fn a_silent_command_is_said_to_be_still_running_every_thirty_seconds() {
    let place = Place::new();
    let confinement = place.confinement(Layers::default());
    let events = std::sync::Mutex::new(Vec::new());
    let watch = |event| events.lock().unwrap().push(event);
    let cancel = CancellationToken::new();
    let outcome = command::run("sleep 600", &confinement, Duration::from_secs(100), &cancel, &watch).await.unwrap();
    assert_eq!(outcome.ended, Ended::TimedOut);
    let events = events.into_inner().unwrap();
    let silences: Vec<u64> = events
        .iter()
        .filter_map(|event| match event {
            command::CommandEvent::Silent(quiet) => Some(quiet.as_secs()),
            command::CommandEvent::Line(_) => None,
        })
        .collect();
    assert_eq!(silences.len(), events.len(), "only heartbeats: {:?}", &events[..events.len().min(5)]);
    assert!(silences.len() >= 3, "{silences:?}");
    assert!(
        silences.iter().enumerate().all(|(i, quiet)| *quiet == 30 * (i as u64 + 1)),
        "{:?}",
        &silences[..5.min(silences.len())]
    );
    assert_eq!(command::HEARTBEAT, Duration::from_secs(30));
}

#[tokio::test]
async fn output_is_bounded_at_the_source_however_much_a_command_prints() {
    let place = Place::new();
    let outcome = place.run(Layers::default(), "head -c 200000000 /dev/zero | tr '\\0' a").await;
    assert_eq!(outcome.output_bytes, 200_000_000);
    assert_eq!(
        outcome.output.chars().count(),
        command::MAX_OUTPUT_CHARS + format!("\n[... {} bytes of output left out ...]\n", outcome.omitted_bytes).len()
    );
    assert_eq!(outcome.omitted_bytes, 200_000_000 - command::MAX_OUTPUT_CHARS as u64);
    assert!(command::unavailable().is_none(), "this machine confines commands: {:?}", command::unavailable());
}

/// A backend of an embedding's own: it records each operation, passes the file tools to
/// the workspace on this machine, and keeps `ls` waiting, keeping its abort signal.
struct Recording {
    local: exec_host::LocalBackend,
    seen: std::sync::Mutex<Vec<String>>,
    waiting: std::sync::Mutex<Option<CancellationToken>>,
}

impl exec_host::Backend for Recording {
    fn kind(&self) -> &str {
        "recording"
    }

    fn file(
        &self,
        tool: &str,
        args: serde_json::Map<String, Value>,
        cancel: CancellationToken,
    ) -> exec_host::BoxFuture<'_, Result<Value, exec_host::ToolError>> {
        self.seen.lock().unwrap().push(tool.to_string());
        if tool == "ls" {
            *self.waiting.lock().unwrap() = Some(cancel);
            return Box::pin(std::future::pending());
        }
        self.local.file(tool, args, cancel)
    }

    fn command<'a>(
        &'a self,
        command: &'a str,
        timeout: Duration,
        cancel: &'a CancellationToken,
        watch: &'a (dyn Fn(command::CommandEvent) + Send + Sync),
    ) -> exec_host::BoxFuture<'a, Result<command::CommandOutcome, exec_host::ToolError>> {
        self.seen.lock().unwrap().push(format!("command {command}"));
        self.local.command(command, timeout, cancel, watch)
    }
}

#[tokio::test]
async fn the_file_tools_and_bash_go_through_the_session_s_backend_which_gets_every_abort() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha").unwrap();
    let local = exec_host::LocalBackend::open(dir.path()).unwrap();
    let backend = Arc::new(Recording { local, seen: Default::default(), waiting: Default::default() });
    let on = Layer::from_value(json!({"enableBash": true, "workspaceBackend": "recording"})).unwrap();
    let harness = Harness::with(|builder| builder.managed_settings(on).workspace_backend(backend.clone())).await;
    let code = "const a = await tools.read_file({ path: 'a.txt' }); const b = await tools.Bash({ command: 'echo hi' });\n\
                return [a.content, b.output]";
    let outcome = within(30, harness.run(code)).await;
    assert_eq!(outcome.value().unwrap(), &json!(["alpha", "hi\n"]), "{}", outcome.text());
    // An abort reaches the operation in flight.
    let abort = CancellationToken::new();
    let later = abort.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        later.cancel();
    });
    let aborted = within(30, harness.session.call(exec_host_tests::exec_call("return await tools.ls({})"), abort)).await;
    assert!(aborted.is_error(), "{}", aborted.text());
    let seen = backend.seen.lock().unwrap().clone();
    assert_eq!(seen, ["read_file", "command echo hi", "ls"]);
    let signal = backend.waiting.lock().unwrap().clone().expect("ls was given its abort signal");
    assert!(signal.is_cancelled(), "the abort reached the operation in flight");
}

#[tokio::test]
async fn a_workspace_backend_the_settings_name_that_is_not_available_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let remote = Layer::from_value(json!({"workspaceBackend": "remote"})).unwrap();
    let counter = exec_host_tests::Counter::default();
    let refused = Harness::builder(dir.path(), &counter).await.managed_settings(remote).build().await;
    let Err(error) = refused else { panic!("the session started") };
    let error = error.to_string();
    assert!(error.contains("the settings ask for the workspace backend `remote`, which is not available here"), "{error}");
    let local = Layer::from_value(json!({"workspaceBackend": "local"})).unwrap();
    assert!(Harness::builder(dir.path(), &counter).await.managed_settings(local).build().await.is_ok());
}

#[tokio::test]
async fn the_bash_network_setting_opens_the_network_and_without_it_it_stays_closed() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = bash(&format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected || echo closed"));
    for (settings, expected) in [(json!({"bashNetwork": true}), "connected\n"), (json!({}), "closed\n")] {
        let approver = TestApprover::new(|_| Approval::AllowOnce);
        let harness = harness(settings.clone(), PermissionMode::BypassPermissions, &approver).await;
        let outcome = within(30, harness.run(&format!("return (await {connect}).output"))).await;
        let output = outcome.value().and_then(Value::as_str).unwrap_or_else(|| panic!("{}", outcome.text())).to_string();
        assert!(output.ends_with(expected), "{settings}: {output}");
    }
}
