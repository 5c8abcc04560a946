//! The compiled-guest cache: reused, taken from the build, never inside the workspace; the
//! perf map.

use std::path::Path;
use std::process::{Output, Stdio};

use crate::common::exec_host;
use crate::{Setup, stderr, stdout};

#[test]
fn a_second_run_reuses_the_compiled_guest() {
    let setup = Setup::with_empty_cache();
    let script = setup.script("s.js", "return 1");
    assert_eq!(setup.run(&["run", &script]).status.code(), Some(0));
    let cached: Vec<_> = std::fs::read_dir(&setup.cache).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(cached.len(), 1, "one compiled guest is cached: {cached:?}");
    let written = std::fs::metadata(&cached[0]).unwrap().modified().unwrap();
    assert_eq!(setup.run(&["run", &script]).status.code(), Some(0));
    assert_eq!(std::fs::metadata(&cached[0]).unwrap().modified().unwrap(), written, "the second run must not recompile");

    // A damaged cache file is ignored and replaced, never trusted.
    std::fs::write(&cached[0], b"not a compiled guest").unwrap();
    let output = setup.run(&["run", &script]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "1\n");

    // Native code others could have written is not mapped.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&cached[0], std::fs::Permissions::from_mode(0o666)).unwrap();
    let output = setup.run(&["run", &script]);
    assert_eq!((output.status.code(), stdout(&output).as_str()), (Some(0), "1\n"));
    assert!(stderr(&output).contains("is writable by other users (mode 666)"), "{}", stderr(&output));
}

/// A first run needs no compiling on the machine exec-host was built on: the guest's native
/// code from the build goes to the cache, and the next run maps it.
#[test]
fn a_first_run_takes_the_guest_compiled_when_exec_host_was_built() {
    if cfg!(debug_assertions) {
        return; // an unoptimised build compiles no guest (host/build.rs)
    }
    let setup = Setup::with_empty_cache();
    let script = setup.script("s.js", "return 1");
    let origin = |output: &Output| {
        let err = stderr(output);
        ["compiled when exec-host was built", "mapped from the cache", "compiled now"]
            .into_iter()
            .find(|origin| err.contains(&format!("the guest's native code: {origin}")))
            .unwrap_or_else(|| panic!("no origin in: {err}"))
    };
    let first = setup.run(&["run", "-vv", &script]);
    assert_eq!((first.status.code(), stdout(&first).as_str()), (Some(0), "1\n"), "{}", stderr(&first));
    assert_eq!(origin(&first), "compiled when exec-host was built");
    assert_eq!(std::fs::read_dir(&setup.cache).unwrap().count(), 1, "the code was cached");
    assert_eq!(origin(&setup.run(&["run", "-vv", &script])), "mapped from the cache");
}

#[test]
fn a_perf_map_names_the_guest_functions_when_asked() {
    let setup = Setup::new();
    let script = setup.script("s.js", "return 1");
    let run = |perf_map: &str| {
        let child = exec_host(setup.workspace.path(), &setup.cache)
            .args(["run", &script])
            .env("EXEC_HOST_PERF_MAP", perf_map)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        // wasmtime writes it under /tmp whatever TMPDIR says.
        let map = Path::new("/tmp").join(format!("perf-{}.map", child.id()));
        assert!(child.wait_with_output().unwrap().status.success());
        let text = std::fs::read_to_string(&map).ok();
        let _ = std::fs::remove_file(&map);
        text
    };
    let text = run("1").expect("EXEC_HOST_PERF_MAP=1 writes /tmp/perf-PID.map");
    assert!(text.lines().any(|line| line.contains("wasm[0]::function[")), "the guest's functions are named: {text:.300}");
    assert_eq!(run("0"), None, "no map unless asked");
}

#[test]
fn a_cache_inside_the_workspace_is_never_used() {
    let setup = Setup::new();
    let script = setup.script("s.js", "return 1");
    let cache = setup.workspace.path().join(".cache/exec-host");
    let run = || exec_host(setup.workspace.path(), &cache).args(["run", "--workspace", ".", &script]).output().unwrap();
    let output = run();
    assert_eq!((output.status.code(), stdout(&output).as_str()), (Some(0), "1\n"));
    assert!(stderr(&output).contains("is inside the workspace"), "{}", stderr(&output));
    assert!(!cache.exists() || std::fs::read_dir(&cache).unwrap().next().is_none(), "nothing was cached there");
}
