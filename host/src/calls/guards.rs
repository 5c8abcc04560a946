//! What the host's own children name is read-only to the workspace tools. Every place
//! inside the workspace that a hook's or a stdio server's command line names (a word of it
//! that is a path, relative to the child's working directory or absolute), the folder
//! holding it, and the `node_modules` folders Node would look in from there, are kept
//! read-only, as `.git` is ([`guarded_places`], enforced by `Workspace::check_writable`). A
//! script can neither rewrite `hooks/audit.sh` nor plant `hooks/json.py` beside
//! `hooks/guard.py`. The other half of the rule, an import path kept off the workspace, is
//! in [`crate::sources::children`].

use std::path::{Component, Path, PathBuf};

use crate::sources::tools::builtin::GuardedPlace;
use crate::support::lock::Unpoisoned;

/// Characters that end a word in a shell command beside whitespace: operators and the `=`
/// of an assignment or a `--flag=value`.
const WORD_BREAKS: &[char] = &[';', '&', '|', '<', '>', '(', ')', '=', '`'];

/// Characters of a command line read for paths; a longer one is read this far.
const MAX_COMMAND_CHARS: usize = 64 * 1024;

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
        for absolute in [normalise(&path), crate::support::paths::real_path(&path)] {
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
    workspace: std::sync::Arc<crate::sources::tools::builtin::Workspace>,
    /// The workspace as given, made absolute: where hooks run.
    given: PathBuf,
    state: std::sync::Mutex<GuardState>,
}

#[derive(Default)]
struct GuardState {
    servers: Vec<GuardedPlace>,
    /// The settings whose hooks are guarded now.
    hooks_of: Option<std::sync::Arc<crate::calls::settings::Settings>>,
    hooks: Vec<GuardedPlace>,
}

impl Guards {
    pub fn new(workspace: std::sync::Arc<crate::sources::tools::builtin::Workspace>, given: &Path) -> Self {
        let given =
            if given.is_absolute() { given.to_path_buf() } else { std::env::current_dir().unwrap_or_default().join(given) };
        Guards { workspace, given, state: Default::default() }
    }

    /// Guards the command of stdio server `name` (an HTTP server runs nothing here).
    pub fn add_server(&self, name: &str, server: &crate::sources::mcp::ServerConfig) {
        let crate::sources::mcp::Transport::Stdio { command, args, cwd, .. } = &server.transport else { return };
        let cwd = cwd.clone().or_else(|| std::env::current_dir().ok()).unwrap_or_default();
        let words = std::iter::once(command.as_str()).chain(args.iter().map(String::as_str));
        let places = guarded_places(words, &cwd, &self.roots(), &format!("the MCP server `{name}`"));
        let mut state = self.state.locked();
        state.servers.extend(places);
        self.apply(&state);
    }

    /// Guards the hooks of `settings`, when they are not the ones guarded already.
    pub fn hooks_of(&self, settings: &std::sync::Arc<crate::calls::settings::Settings>) {
        let mut state = self.state.locked();
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
