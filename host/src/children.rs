//! The processes the host starts itself: hook commands and stdio MCP servers. They run
//! outside the sandbox, as the host's user, so nothing a script can write may become code
//! they run or import. Two rules hold that:
//!
//! - **What their commands name is read-only.** Every place inside the workspace that a
//!   hook's or a server's command line names (a word of it that is a path, relative to the
//!   child's working directory or absolute), the folder holding it, and the `node_modules`
//!   folders Node would look in from there, are kept read-only to the workspace tools, as
//!   `.git` is ([`guarded_places`], enforced by `Workspace::check_writable`). A script can
//!   neither rewrite `hooks/audit.sh` nor plant `hooks/json.py` beside `hooks/guard.py`.
//! - **Their import path stays off the working directory.** Each child gets
//!   [`IMPORT_PATH_ENV`]: Python then puts neither its working directory (`python3 -c`) nor
//!   the folder of the script it runs on `sys.path`, so a `json.py` planted in the workspace
//!   is never imported. A command that wants its folder there says so (`PYTHONPATH=hooks`),
//!   which names the folder and so guards it.

use std::path::{Component, Path, PathBuf};

/// Set in the environment of every hook and stdio server (a server's own `env` entry may
/// set it otherwise).
pub const IMPORT_PATH_ENV: [(&str, &str); 1] = [("PYTHONSAFEPATH", "1")];

/// Characters that end a word in a shell command beside whitespace: operators and the `=`
/// of an assignment or a `--flag=value`.
const WORD_BREAKS: &[char] = &[';', '&', '|', '<', '>', '(', ')', '=', '`'];

/// Characters of a command line read for paths; a longer one is read this far.
const MAX_COMMAND_CHARS: usize = 64 * 1024;

/// A place inside the workspace that a child's command names, and who names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuardedPlace {
    /// Relative to the workspace and `/`-separated, as `Workspace::rule_paths` gives places;
    /// everything at or below it is guarded.
    pub place: String,
    /// Who runs it, for the refusal: "the PreToolUse hook `sh hooks/audit.sh`".
    pub by: String,
}

/// The places `words` (a child's command line) name inside the workspace at `roots` (its
/// path as given and as resolved), for a child that starts in `cwd`: each named path,
/// where a link there leads, the folder holding it, and the `node_modules` folders on the
/// way up to the workspace, from there and from `cwd`. The workspace itself is never
/// guarded whole: a word that names it guards nothing but its `node_modules`.
pub fn guarded_places<'a>(words: impl IntoIterator<Item = &'a str>, cwd: &Path, roots: &[&Path], by: &str) -> Vec<GuardedPlace> {
    let mut places = Vec::new();
    let mut guard = |place: String| {
        if !places.iter().any(|known: &GuardedPlace| known.place == place) {
            places.push(GuardedPlace { place, by: by.to_string() });
        }
    };
    // Folders Node looks up from for `node_modules`: the working directory's and each named
    // place's (a named folder is guarded whole already).
    let mut lookups: Vec<String> = inside(cwd, roots).into_iter().collect();
    for word in words.into_iter().flat_map(|word| word.split(WORD_BREAKS)) {
        // A variable the shell expands cannot be followed here.
        if word.is_empty() || word.contains('$') || word.starts_with('-') {
            continue;
        }
        let path = if Path::new(word).is_absolute() { PathBuf::from(word) } else { cwd.join(word) };
        for absolute in [normalise(&path), crate::tools::builtin::real_path(&path)] {
            if let Some(place) = inside(&absolute, roots).filter(|place| !place.is_empty()) {
                let folder = place.rsplit_once('/').map_or("", |(folder, _)| folder).to_string();
                if !folder.is_empty() {
                    guard(folder.clone());
                }
                lookups.push(folder);
                guard(place);
            }
        }
    }
    for start in lookups {
        let mut folder = start.as_str();
        loop {
            guard(if folder.is_empty() { "node_modules".to_string() } else { format!("{folder}/node_modules") });
            match folder.rsplit_once('/') {
                Some((up, _)) => folder = up,
                None if !folder.is_empty() => folder = "",
                None => break,
            }
        }
    }
    places
}

/// Keeps what one session's children name out of its workspace tools' writes: the hooks of
/// the settings in force and every stdio server the session started.
pub(crate) struct Guards {
    workspace: std::sync::Arc<crate::tools::builtin::Workspace>,
    /// The workspace as given, made absolute: where hooks run.
    given: PathBuf,
    state: std::sync::Mutex<GuardState>,
}

#[derive(Default)]
struct GuardState {
    servers: Vec<GuardedPlace>,
    /// The settings whose hooks are guarded now.
    hooks_of: Option<std::sync::Arc<crate::settings::Settings>>,
    hooks: Vec<GuardedPlace>,
}

impl Guards {
    pub fn new(workspace: std::sync::Arc<crate::tools::builtin::Workspace>, given: &Path) -> Self {
        let given =
            if given.is_absolute() { given.to_path_buf() } else { std::env::current_dir().unwrap_or_default().join(given) };
        Guards { workspace, given, state: Default::default() }
    }

    /// Guards the command of stdio server `name` (an HTTP server runs nothing here).
    pub fn add_server(&self, name: &str, server: &crate::mcp::ServerConfig) {
        let crate::mcp::Transport::Stdio { command, args, cwd, .. } = &server.transport else { return };
        let cwd = cwd.clone().or_else(|| std::env::current_dir().ok()).unwrap_or_default();
        let words = std::iter::once(command.as_str()).chain(args.iter().map(String::as_str));
        let places = guarded_places(words, &cwd, &self.roots(), &format!("the MCP server `{name}`"));
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.servers.extend(places);
        self.apply(&state);
    }

    /// Guards the hooks of `settings`, when they are not the ones guarded already.
    pub fn hooks_of(&self, settings: &std::sync::Arc<crate::settings::Settings>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.hooks_of.as_ref().is_some_and(|guarded| std::sync::Arc::ptr_eq(guarded, settings)) {
            return;
        }
        let roots = self.roots();
        let events = [("PreToolUse", &settings.pre_tool_use), ("PostToolUse", &settings.post_tool_use)];
        state.hooks = events
            .into_iter()
            .flat_map(|(event, entries)| {
                entries.iter().flat_map(move |entry| entry.value.hooks.iter().map(move |hook| (event, hook)))
            })
            .flat_map(|(event, hook)| {
                let shown: String = hook.command.chars().take(80).collect();
                let by = format!("the {event} hook `{shown}`");
                let words: Vec<String> = shell_words(&hook.command)
                    .into_iter()
                    .map(|word| if word.contains('$') { expand_variables(&word, &self.given).unwrap_or(word) } else { word })
                    .collect();
                guarded_places(words.iter().map(String::as_str), &self.given, &roots, &by)
            })
            .collect();
        state.hooks_of = Some(settings.clone());
        self.apply(&state);
    }

    fn roots(&self) -> Vec<&Path> {
        std::iter::once(self.given.as_path()).chain(self.workspace.root()).collect()
    }

    fn apply(&self, state: &GuardState) {
        self.workspace.guard(state.hooks.iter().chain(&state.servers).cloned().collect());
    }
}

/// Makes `command` start in a PID namespace of its own, where the system allows one (as
/// root, or through an unprivileged user namespace that maps only this user): its first
/// process is the namespace's init, and when it ends the kernel kills every process left
/// in the namespace, a daemon that left the process group with `setsid` or forked twice
/// included. Between the host and that process stays one small keeper process (the one
/// the host waits on), which exits with its status. Where the system allows no such
/// namespace (a container without the capability, user namespaces turned off), the
/// command runs without one, confined to its process group alone, and the host says so
/// once.
pub fn contain(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    if !namespaces_available() {
        return;
    }
    let maps = UserMaps::for_this_user();
    // SAFETY: the closure runs in the forked child before exec, and does only what is
    // async-signal-safe there: system calls on data prepared beforehand, no allocation,
    // no lock.
    unsafe {
        command.pre_exec(move || enter_pid_namespace(maps.as_ref(), false));
    }
}

/// Whether this system lets a child make a PID namespace, found once per process by a
/// child that tries.
fn namespaces_available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        use std::os::unix::process::CommandExt;
        let maps = UserMaps::for_this_user();
        let mut probe = std::process::Command::new("/bin/sh");
        probe.arg("-c").arg("exit 0").stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null());
        probe.stderr(std::process::Stdio::null());
        // SAFETY: as in `contain`.
        unsafe {
            probe.pre_exec(move || enter_pid_namespace(maps.as_ref(), true));
        }
        let available = probe.status().is_ok_and(|status| status.success());
        if !available {
            tracing::warn!(
                "this system allows no PID namespace for hook commands: each runs in its own process group only, so a process it detaches with `setsid` can outlive it"
            );
        }
        available
    })
}

/// What a user namespace maps when the host is not root: this user's ids onto themselves.
struct UserMaps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl UserMaps {
    /// `None` as root, which needs no user namespace for a PID namespace.
    fn for_this_user() -> Option<UserMaps> {
        // SAFETY: getuid(2) and getgid(2) have no preconditions and cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        (uid != 0).then(|| UserMaps {
            uid_map: format!("{uid} {uid} 1\0").into_bytes(),
            gid_map: format!("{gid} {gid} 1\0").into_bytes(),
        })
    }
}

/// In a forked child: unshares a PID namespace (and a user namespace with `maps`), then
/// forks the namespace's init, which returns to be exec'd, while this process waits for
/// it and exits as it did. When the namespace cannot be made, the command runs in the
/// host's namespace, unless this is the `probe` that finds out whether it can.
fn enter_pid_namespace(maps: Option<&UserMaps>, probe: bool) -> std::io::Result<()> {
    let flags = if maps.is_some() { libc::CLONE_NEWUSER | libc::CLONE_NEWPID } else { libc::CLONE_NEWPID };
    // SAFETY (this block and the ones below): plain system calls on this process, with
    // buffers that outlive them.
    if unsafe { libc::unshare(flags) } != 0 {
        return if probe { Err(std::io::Error::last_os_error()) } else { Ok(()) };
    }
    if let Some(maps) = maps {
        for (file, text) in [
            (c"/proc/self/setgroups", &b"deny\0"[..]),
            (c"/proc/self/uid_map", &maps.uid_map),
            (c"/proc/self/gid_map", &maps.gid_map),
        ] {
            let fd = unsafe { libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
            let length = text.len() - 1;
            let written = fd >= 0 && unsafe { libc::write(fd, text.as_ptr().cast(), length) } == length as isize;
            if fd >= 0 {
                unsafe { libc::close(fd) };
            }
            if !written {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    let init = unsafe { libc::fork() };
    if init < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if init == 0 {
        return Ok(());
    }
    // The keeper: never returns, so it never runs the command itself. It holds no
    // descriptor: not the command's pipes (their ends must close with the command), nor
    // the one through which the host learns that the command started (the host's spawn
    // waits until every copy of it is closed).
    if unsafe { libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) } != 0 {
        for fd in 0..65_536 {
            unsafe { libc::close(fd) };
        }
    }
    let mut status = 0;
    loop {
        let waited = unsafe { libc::waitpid(init, &mut status, 0) };
        if waited == init {
            break;
        }
        if waited < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            unsafe { libc::_exit(127) };
        }
    }
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::kill(libc::getpid(), signal);
        }
        unsafe { libc::_exit(128 + signal) };
    }
    unsafe { libc::_exit(libc::WEXITSTATUS(status)) }
}

/// The words of a shell command line as `sh` would split them (quotes removed); plain
/// whitespace-separated words when the quoting does not close.
pub fn shell_words(command: &str) -> Vec<String> {
    let mut end = command.len().min(MAX_COMMAND_CHARS);
    while !command.is_char_boundary(end) {
        end -= 1;
    }
    let command = &command[..end];
    shlex::split(command).unwrap_or_else(|| command.split_whitespace().map(str::to_string).collect())
}

/// `word` with each `$NAME` and `${NAME}` replaced as `sh` would for a hook, which inherits
/// the host's environment and starts in `cwd` (its `PWD`); `None` when a variable is not set
/// or the word holds another kind of expansion, which is not followed.
fn expand_variables(word: &str, cwd: &Path) -> Option<String> {
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut expanded = String::new();
    let mut rest = word;
    while let Some(at) = rest.find('$') {
        expanded.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, next) = match after.strip_prefix('{') {
            Some(braced) => braced.split_once('}')?,
            None => after.split_at(after.find(|c| !is_name(c)).unwrap_or(after.len())),
        };
        if name.is_empty() || !name.chars().all(is_name) || name.starts_with(|c: char| c.is_ascii_digit()) {
            return None;
        }
        match name {
            "PWD" => expanded.push_str(cwd.to_str()?),
            _ => expanded.push_str(&std::env::var(name).ok()?),
        }
        rest = next;
    }
    expanded.push_str(rest);
    Some(expanded)
}

/// `path` relative to the first of `roots` it lies in, `/`-separated (`""` for a root).
fn inside(path: &Path, roots: &[&Path]) -> Option<String> {
    let path = normalise(path);
    roots
        .iter()
        .find_map(|root| path.strip_prefix(normalise(root)).ok())
        .map(|relative| relative.components().map(|part| part.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/"))
}

/// `path` without `.` and with each `..` taking off the part before it, as written.
fn normalise(path: &Path) -> PathBuf {
    let mut clean = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                clean.pop();
            }
            other => clean.push(other),
        }
    }
    clean
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(command: &str, cwd: &str) -> Vec<String> {
        let words = shell_words(command);
        let guarded = guarded_places(words.iter().map(String::as_str), Path::new(cwd), &[Path::new("/ws")], "a hook");
        guarded.into_iter().map(|guarded| guarded.place).collect()
    }

    #[test]
    fn a_command_guards_what_it_names_its_folder_and_where_node_looks() {
        let guarded = places("python3 hooks/guard.py", "/ws");
        for place in ["hooks/guard.py", "hooks", "hooks/node_modules", "node_modules"] {
            assert!(guarded.contains(&place.to_string()), "{place}: {guarded:?}");
        }
        let guarded = places("cd tools && PYTHONPATH=lib sh ./run.sh --config=/ws/conf/x.json", "/ws");
        for place in ["tools", "lib", "run.sh", "conf", "conf/x.json", "conf/node_modules", "node_modules"] {
            assert!(guarded.contains(&place.to_string()), "{place}: {guarded:?}");
        }
        assert!(!guarded.iter().any(|place| place.starts_with("--")), "{guarded:?}");
        // Outside the workspace, nothing; the workspace itself only for its node_modules.
        let guarded = places("/usr/bin/python3 /etc/hook.py ../other/x.sh", "/ws");
        assert_eq!(guarded, ["node_modules"]);
        assert_eq!(places("ls . /ws /ws/", "/ws"), ["ls", "node_modules"]);
        // A server started elsewhere names nothing in the workspace, unless it names it.
        assert!(places("node server.js", "/srv").is_empty());
        assert_eq!(places("node ../ws/app/server.js", "/srv"), ["app", "app/server.js", "app/node_modules", "node_modules"]);
        // Variables are not guessed at; quoting is read as the shell reads it.
        assert_eq!(places("sh \"$CLAUDE_PROJECT_DIR/x.sh\"", "/ws"), ["sh", "node_modules"]);
        // What a hook's shell would expand is expanded: its working directory, the host's
        // variables; what is not set, or is another expansion, is left alone.
        let ws = Path::new("/ws");
        assert_eq!(expand_variables("$PWD/hooks/a.sh", ws).as_deref(), Some("/ws/hooks/a.sh"));
        assert_eq!(expand_variables("${PWD}/b", ws).as_deref(), Some("/ws/b"));
        let path = std::env::var("PATH").unwrap();
        assert_eq!(expand_variables("x${PATH}y", ws), Some(format!("x{path}y")));
        assert_eq!(expand_variables("$EXEC_HOST_SURELY_UNSET_VARIABLE/a", ws), None);
        assert_eq!(expand_variables("$(pwd)/a", ws), None);
        assert_eq!(expand_variables("${PWD:-x}/a", ws), None);
        assert!(places("sh 'my hooks/a b.sh'", "/ws").contains(&"my hooks/a b.sh".to_string()));
    }
}
