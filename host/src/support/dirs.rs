//! The user's base folders, by the XDG Base Directory rule, resolved in one place: the
//! variable when it is set and not empty, else its default under `$HOME` when that is set
//! and not empty, else none. An empty variable counts as unset, as the specification says,
//! so `HOME=` never turns into a folder relative to wherever the process runs.

use std::ffi::OsString;
use std::path::PathBuf;

/// Which base folder.
#[derive(Clone, Copy, Debug)]
pub enum BaseDir {
    /// `$XDG_CONFIG_HOME`, else `~/.config`: settings.
    Config,
    /// `$XDG_CACHE_HOME`, else `~/.cache`: what can be made again (compiled guests).
    Cache,
    /// `$XDG_STATE_HOME`, else `~/.local/state`: what outlives a run (compacted results).
    State,
    /// `$XDG_DATA_HOME`, else `~/.local/share`: the user's own data (OAuth credentials).
    Data,
}

impl BaseDir {
    fn variable_and_default(self) -> (&'static str, &'static str) {
        match self {
            BaseDir::Config => ("XDG_CONFIG_HOME", ".config"),
            BaseDir::Cache => ("XDG_CACHE_HOME", ".cache"),
            BaseDir::State => ("XDG_STATE_HOME", ".local/state"),
            BaseDir::Data => ("XDG_DATA_HOME", ".local/share"),
        }
    }

    /// The folder of exec-host's own files in this base folder: `<base>/exec-host`.
    pub fn exec_host(self) -> Option<PathBuf> {
        self.resolve(|name| std::env::var_os(name)).map(|base| base.join("exec-host"))
    }

    /// The base folder, with the environment read through `var`.
    fn resolve(self, var: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
        let (variable, default) = self.variable_and_default();
        let set = |name: &str| var(name).filter(|value| !value.is_empty()).map(PathBuf::from);
        set(variable).or_else(|| set("HOME").map(|home| home.join(default)))
    }
}

/// The value of an environment variable that names a folder, when it is set and not empty.
pub fn folder_from(variable: &str) -> Option<PathBuf> {
    std::env::var_os(variable).filter(|value| !value.is_empty()).map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_variable_counts_as_unset_and_an_empty_home_gives_no_folder() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(key, _)| *key == name).map(|(_, value)| OsString::from(value))
        };
        let config = BaseDir::Config;
        assert_eq!(config.resolve(env(&[("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")])), Some("/x".into()));
        assert_eq!(config.resolve(env(&[("XDG_CONFIG_HOME", ""), ("HOME", "/h")])), Some("/h/.config".into()));
        assert_eq!(BaseDir::State.resolve(env(&[("HOME", "/h")])), Some("/h/.local/state".into()));
        assert_eq!(BaseDir::Cache.resolve(env(&[("XDG_CACHE_HOME", ""), ("HOME", "")])), None);
        assert_eq!(config.resolve(env(&[("HOME", "")])), None, "an empty HOME is no home");
    }
}
