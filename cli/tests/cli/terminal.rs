//! A terminal: the approval prompt, escape sequences shown and not obeyed, and the progress
//! of calls and console lines while a script runs.

use std::io::Write;
use std::process::Stdio;

use serde_json::{Value, json};

use crate::common::{exec_host, fixture_mcp_server};
use crate::{Setup, WRITES, mcp_config, stderr, stdout};

/// A pseudo-terminal: the controlling side and the terminal a child is given.
fn pseudo_terminal() -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd;
    let (mut controller, mut terminal) = (0, 0);
    // SAFETY: openpty(3) writes two new descriptors, which the files below then own.
    let status =
        unsafe { libc::openpty(&mut controller, &mut terminal, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
    assert_eq!(status, 0, "openpty: {}", std::io::Error::last_os_error());
    unsafe { (std::fs::File::from_raw_fd(controller), std::fs::File::from_raw_fd(terminal)) }
}

/// Runs `args` with stdin and stderr on a terminal, answering each prompt with the next of
/// `answers`; gives the exit status, stdout and what the terminal showed.
fn run_on_a_terminal(setup: &Setup, args: &[&str], answers: &[&str]) -> (Option<i32>, String, String) {
    on_a_terminal(setup, args, answers, false)
}

/// [`run_on_a_terminal`], with stdout on the terminal too when `all_output` is set.
fn on_a_terminal(setup: &Setup, args: &[&str], answers: &[&str], all_output: bool) -> (Option<i32>, String, String) {
    use std::io::Read;
    let (mut controller, terminal) = pseudo_terminal();
    let output_to = if all_output { Stdio::from(terminal.try_clone().unwrap()) } else { Stdio::piped() };
    let mut child = exec_host(setup.workspace.path(), &setup.cache)
        .args(args)
        .stdin(terminal.try_clone().unwrap())
        .stderr(terminal)
        .stdout(output_to)
        .spawn()
        .unwrap();
    let (shown, received) = std::sync::mpsc::channel();
    let mut reader = controller.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        // Ends with an error (EIO) once the child has closed the terminal.
        while let Ok(n @ 1..) = reader.read(&mut buffer) {
            if shown.send(buffer[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut screen = String::new();
    let mut answered = 0;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "no end; the terminal shows: {screen}");
        if let Ok(bytes) = received.recv_timeout(std::time::Duration::from_millis(50)) {
            screen.push_str(&String::from_utf8_lossy(&bytes));
        }
        // Answer once the whole prompt is shown, so that the terminal's echo of the answer
        // lands after it.
        if screen.matches("[n] no: ").count() > answered {
            let answer = answers.get(answered).unwrap_or_else(|| panic!("an unexpected prompt: {screen}"));
            controller.write_all(format!("{answer}\n").as_bytes()).unwrap();
            answered += 1;
        }
    }
    let output = child.wait_with_output().unwrap();
    // What was still on its way through the terminal.
    while let Ok(bytes) = received.recv_timeout(std::time::Duration::from_millis(200)) {
        screen.push_str(&String::from_utf8_lossy(&bytes));
    }
    assert_eq!(answered, answers.len(), "prompts answered; the terminal shows: {screen}");
    (output.status.code(), stdout(&output), screen)
}

#[test]
fn a_terminal_prompt_allows_once_always_or_not() {
    let setup = Setup::new();
    let script = setup.script("s.js", WRITES);
    let settings = setup.workspace.path().join(".exec-host/settings.json");
    let ask = ["run", "--ask", "write_file", script.as_str()];

    let (status, out, screen) = run_on_a_terminal(&setup, &ask, &["n"]);
    assert_eq!(status, Some(1), "{out}");
    assert!(out.contains("`write_file` was denied: the user said no at the terminal"), "{out}");
    assert!(screen.contains("`write_file` wants to run, called by the script of Exec call"), "{screen}");
    assert!(screen.contains(r#"{"path":"a.txt","content":"x"}"#), "the input is shown: {screen}");
    assert!(screen.contains("It asks because of the permissions.ask rule `write_file` in the command line."), "{screen}");
    assert!(!setup.workspace.path().join("a.txt").exists());

    let (status, out, _) = run_on_a_terminal(&setup, &ask, &["y"]);
    assert_eq!((status, out.trim_end().ends_with('x')), (Some(0), true), "{out}");
    assert!(!settings.exists(), "once saves nothing");

    // "Always" saves the rule to the project settings; the next run in default mode does not ask.
    let (status, _, _) = run_on_a_terminal(&setup, &["run", "--permission-mode", "default", &script], &["a"]);
    assert_eq!(status, Some(0));
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(saved, json!({"permissions": {"allow": ["write_file"]}}));
    let (status, _, _) = run_on_a_terminal(&setup, &["run", "--permission-mode", "default", &script], &[]);
    assert_eq!(status, Some(0));

    // Under an ask rule, which no allow rule outranks, "always" lasts for the run and saves
    // nothing: the second write does not ask.
    std::fs::remove_file(&settings).unwrap();
    let twice = setup.script("twice.js", "await tools.write_file({ path: 'b.txt', content: '1' }); await tools.write_file({ path: 'c.txt', content: '2' }); return 'both'");
    let (status, out, screen) = run_on_a_terminal(&setup, &["run", "--ask", "write_file", &twice], &["a"]);
    assert_eq!(status, Some(0), "{out}");
    assert!(screen.contains("[a] always (for the rest of this run), [n] no"), "{screen}");
    assert_eq!(screen.matches("wants to run").count(), 1, "asked once: {screen}");
    assert!(!settings.exists(), "no rule is saved that would not stop the asking");
}

#[test]
fn a_terminal_is_shown_escape_sequences_not_given_them() {
    let setup = Setup::new();
    let script = setup.script("s.js", "console.log('\\u001b]0;owned\\u0007'); return '\\u001b[2Jcleared\\u202e'");
    let (status, _, screen) = on_a_terminal(&setup, &["run", &script], &[], true);
    assert_eq!(status, Some(0), "{screen}");
    assert!(screen.contains("\\u{1b}]0;owned\\u{7}") && screen.contains("\\u{1b}[2Jcleared\\u{202e}"), "{screen}");
    // The only escape is the host's own, which erases its status line.
    let without_status = screen.replace("\r\u{1b}[2K", "\r");
    assert!(!without_status.contains('\u{1b}'), "no escape of the script reached the terminal: {screen:?}");
    // Into a pipe, the text is the script's own.
    let output = setup.run(&["run", &script]);
    assert!(stdout(&output).contains("\u{1b}[2Jcleared"), "{}", stdout(&output));
}

#[test]
fn a_terminal_sees_calls_and_console_lines_while_the_script_runs() {
    let setup = Setup::new();
    let config = mcp_config(&setup, json!({"fx": {"command": fixture_mcp_server()}}));
    let script = setup.script(
        "s.js",
        "console.log('starting');
         const quick = tools.mcp__fx__slow({ ms: 300 });
         const long = tools.mcp__fx__slow({ ms: 900 });
         await quick;
         console.warn('one is back');
         await long;
         return 'done';",
    );
    let (status, stdout, screen) = run_on_a_terminal(&setup, &["run", "--mcp-config", &config, &script], &[]);
    assert_eq!(status, Some(0), "{screen}");
    assert!(stdout.contains("done"), "{stdout}");
    // Console lines as they happen, the count with the tools being waited on, and the
    // status line erased before the end.
    let first = screen.find("starting").unwrap_or_else(|| panic!("{screen:?}"));
    let both = screen.find("2 tool calls, waiting on mcp__fx__slow, mcp__fx__slow").unwrap_or_else(|| panic!("{screen:?}"));
    let warned = screen.find("[warn] one is back").unwrap_or_else(|| panic!("{screen:?}"));
    let one = screen.rfind("2 tool calls, waiting on mcp__fx__slow\r").unwrap_or_else(|| panic!("{screen:?}"));
    assert!(first < both && both < warned && warned < one, "in the order they happened: {screen:?}");
    let summary = screen.rfind("2 tool calls\r\n").unwrap_or_else(|| panic!("{screen:?}"));
    let erased = screen.rfind("\r\u{1b}[2K").unwrap();
    assert!(one < erased && erased < summary, "the status line is gone before the summary: {screen:?}");

    // A downstream tool's steps show beside its name while it runs.
    let servers = json!({"mcpServers": {"fx": {"command": fixture_mcp_server(), "env": {"FIXTURE_PROGRESS": "1"}}}});
    std::fs::write(setup.workspace.path().join("stepping.json"), servers.to_string()).unwrap();
    let stepping = "stepping.json".to_string();
    let steps = setup.script("steps.js", "return await tools.mcp__fx__steps({ count: 3, ms: 300 })");
    let (status, _, steps_screen) = run_on_a_terminal(&setup, &["run", "--mcp-config", &stepping, &steps], &[]);
    assert_eq!(status, Some(0), "{steps_screen}");
    for step in 1..=3 {
        let line = format!("1 tool call, waiting on mcp__fx__steps ({step}/3: step {step})");
        assert!(steps_screen.contains(&line), "{line} in {steps_screen:?}");
    }

    // --quiet shows none of it; --json output is the same object as ever.
    let (status, stdout, screen) =
        run_on_a_terminal(&setup, &["run", "--quiet", "--json", "--mcp-config", &config, &script], &[]);
    assert_eq!(status, Some(0), "{screen}");
    assert!(!screen.contains("waiting on") && !screen.contains("starting"), "{screen:?}");
    let result: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!((result["value"].clone(), result["logs"].clone()), (json!("done"), json!(["starting", "[warn] one is back"])));
    // Into a pipe, standard error has no progress.
    let output = setup.run(&["run", "--mcp-config", &config, &script]);
    assert!(!stderr(&output).contains("waiting on") && !stderr(&output).contains('\u{1b}'), "{}", stderr(&output));
    // The result going to a file keeps its console section; on the terminal that showed the
    // lines live, they are not printed a second time.
    let piped = String::from_utf8_lossy(&output.stdout);
    assert!(piped.contains("Console output:\nstarting"), "{piped}");
    let (status, _, screen) = on_a_terminal(&setup, &["run", "--mcp-config", &config, &script], &[], true);
    assert_eq!(status, Some(0), "{screen}");
    assert_eq!(screen.matches("one is back").count(), 1, "{screen:?}");
    assert!(!screen.contains("Console output:") && screen.contains("done"), "{screen:?}");
}

#[test]
fn a_terminal_sees_a_bash_command_s_lines_beside_its_name_while_it_runs() {
    let setup = Setup::new();
    let script = setup
        .script("b.js", "return (await tools.Bash({ command: 'echo compiling; sleep 0.5; echo linking; sleep 0.5' })).exitCode");
    let (status, stdout, screen) = run_on_a_terminal(&setup, &["run", "--enable-bash", "--allow", "Bash", &script], &[]);
    assert_eq!(status, Some(0), "{screen}");
    assert!(stdout.contains('0'), "{stdout}");
    let first = screen.find("1 tool call, waiting on Bash (1: compiling)").unwrap_or_else(|| panic!("{screen:?}"));
    let second = screen.find("1 tool call, waiting on Bash (2: linking)").unwrap_or_else(|| panic!("{screen:?}"));
    assert!(first < second, "{screen:?}");
}

#[test]
fn a_reader_that_closes_the_pipe_early_ends_every_listing_command_quietly() {
    use std::io::{BufRead, BufReader};
    let setup = Setup::new();
    for args in [&["conformance"][..], &["search", ""], &["tools"]] {
        let mut child = exec_host(setup.workspace.path(), &setup.cache)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // `| head -1`: one line read, then the pipe closed.
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        let output = child.wait_with_output().unwrap();
        let errors = String::from_utf8_lossy(&output.stderr);
        assert!(!errors.contains("panicked") && !errors.contains("Broken pipe"), "{args:?}: {errors}");
        assert!(output.status.code().is_some_and(|code| code == 0 || code == 1), "{args:?}: {:?}", output.status);
    }
}
