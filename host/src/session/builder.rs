//! Setting up a session: what the builder collects, and the start (settings read, the
//! workspace opened with its control files read-only, the sandbox and the MCP servers
//! started together).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::calls::funnel::Funnel;
use crate::calls::guards::Guards;
use crate::calls::policy::{Approver, ModeChoice, Policy};
use crate::calls::settings::{self, Layer, PermissionMode, Settings, SettingsFiles, SettingsSource};
use crate::catalogue::pool::DeferralTable;
use crate::conversation::results::{MemoryResultStore, ResultStore, ViewToolCall};
use crate::sandbox::runtime::{Limits, Sandbox, SandboxOptions};
use crate::sources::mcp::servers::McpServers;
use crate::sources::mcp::{CredentialsFile, Login, McpConfig, ServerLimits};
use crate::sources::oauth::SignInSetup;
use crate::sources::tools::builtin::{self, Workspace};
use crate::sources::tools::input::InputHandler;
use crate::sources::tools::{Registry, Tool};
use crate::sources::web_fetch::{PrivateHosts, WebFetch};
use crate::state::{ConversationValues, SealedStore, ValueBounds, Values};

use super::parking::{DEFAULT_PARKED_TTL, Parking};
use super::{Inner, Session, SessionError};

/// Sets up a [`Session`].
pub struct SessionBuilder {
    workspace: Option<PathBuf>,
    tools: Vec<Arc<dyn Tool>>,
    servers: McpConfig,
    server_limits: ServerLimits,
    server_auth: SignInSetup,
    input: Option<Arc<dyn InputHandler>>,
    backend: Option<Arc<dyn builtin::Backend>>,
    managed: Option<Layer>,
    settings_sources: Vec<SettingsSource>,
    deferral: DeferralTable,
    mode: ModeChoice,
    approver: Option<Arc<dyn Approver>>,
    rules_file: Option<PathBuf>,
    read_only_files: Vec<PathBuf>,
    private_places: Vec<PathBuf>,
    sandbox: Option<Sandbox>,
    sandbox_options: SandboxOptions,
    limits: Limits,
    store: Option<Arc<dyn ResultStore>>,
    announcements: bool,
    provider_deferral: bool,
    state_store: Option<SealedStore>,
    conversation: Option<String>,
    parked_ttl: Duration,
    running_lease: Duration,
    transcript_path: Option<PathBuf>,
    value_bounds: ValueBounds,
}

impl Default for SessionBuilder {
    fn default() -> Self {
        SessionBuilder {
            workspace: None,
            tools: Vec::new(),
            servers: McpConfig::default(),
            server_limits: ServerLimits::default(),
            server_auth: SignInSetup { credentials: CredentialsFile::default_path().map(CredentialsFile::at), login: None },
            input: None,
            backend: None,
            managed: None,
            settings_sources: Vec::new(),
            deferral: DeferralTable::default(),
            mode: ModeChoice { explicit: None, start: PermissionMode::Default },
            approver: None,
            rules_file: None,
            read_only_files: Vec::new(),
            private_places: Vec::new(),
            sandbox: None,
            sandbox_options: SandboxOptions::default(),
            limits: Limits::default(),
            store: Some(Arc::new(MemoryResultStore::default())),
            announcements: true,
            provider_deferral: false,
            state_store: None,
            conversation: None,
            parked_ttl: DEFAULT_PARKED_TTL,
            running_lease: super::checkpoint::DEFAULT_RUNNING_LEASE,
            transcript_path: None,
            value_bounds: ValueBounds::default(),
        }
    }
}

impl SessionBuilder {
    /// The directory the builtin workspace tools work in. Without one the session has no
    /// builtin workspace tools.
    pub fn workspace(mut self, dir: impl Into<PathBuf>) -> Self {
        self.workspace = Some(dir.into());
        self
    }

    /// A tool of the embedding's own.
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// MCP servers to connect while the session starts; more can join later with
    /// [`Session::add_server`].
    pub fn mcp_servers(mut self, config: McpConfig) -> Self {
        self.servers = config;
        self
    }

    /// Time each MCP server has to start and list its tools.
    pub fn mcp_connect_timeout(mut self, timeout: Duration) -> Self {
        self.server_limits.connect_timeout = timeout;
        self
    }

    /// Bytes of calls one MCP server may leave waiting in the host before further calls to
    /// it wait for room ([`ServerLimits::queued_bytes`]; default
    /// [`DEFAULT_QUEUED_BYTES`](crate::sources::mcp::DEFAULT_QUEUED_BYTES)).
    pub fn mcp_queued_bytes(mut self, bytes: usize) -> Self {
        self.server_limits.queued_bytes = bytes;
        self
    }

    /// Where the OAuth tokens of HTTP MCP servers are kept and refreshed (default
    /// [`CredentialsFile::default_path`]); `None` keeps none, and a server that asks for a
    /// sign-in fails to start. A file the workspace reaches is never read or written
    /// ([`CredentialsFile::kept_out_of`]).
    pub fn mcp_credentials(mut self, credentials: Option<CredentialsFile>) -> Self {
        self.server_auth.credentials = credentials;
        self
    }

    /// How a person is sent to sign in when an HTTP MCP server asks for OAuth while the
    /// session starts or adds it (default: nobody can be, and such a server fails to start
    /// with the sentence that names `exec-host mcp login`).
    pub fn mcp_login(mut self, login: Login) -> Self {
        self.server_auth.login = Some(login);
        self
    }

    /// Where the workspace tools and the `Bash` tool do their work, in place of the
    /// workspace on this machine (see [`Backend`](crate::Backend)): a backend of the
    /// embedding's own, such as a remote one. The settings' `workspaceBackend`, when set,
    /// must name its kind.
    pub fn workspace_backend(mut self, backend: Arc<dyn builtin::Backend>) -> Self {
        self.backend = Some(backend);
        self
    }

    /// Who answers an MCP server that asks for input in the middle of a call (elicitation:
    /// a form or a URL). Without one, servers are not told this client can be asked, and one
    /// that asks anyway is declined.
    pub fn mcp_input(mut self, handler: Arc<dyn InputHandler>) -> Self {
        self.input = Some(handler);
        self
    }

    /// Settings passed in code: the managed layer, above every file (an administrator's
    /// override, or an embedding's `disallowedTools` as deny rules).
    pub fn managed_settings(mut self, layer: Layer) -> Self {
        self.managed = Some(layer);
        self
    }

    /// Settings files, highest layer first; a file that does not exist is an empty layer.
    /// Each is read again when it changes.
    pub fn settings_files(mut self, files: impl IntoIterator<Item = PathBuf>) -> Self {
        self.settings_sources = files.into_iter().map(SettingsSource::File).collect();
        self
    }

    /// Every layer of settings below the managed values, highest first.
    pub fn settings_sources(mut self, sources: Vec<SettingsSource>) -> Self {
        self.settings_sources = sources;
        self
    }

    /// The layers `exec-host` itself reads: the managed file, `command_line` (rules given
    /// as flags), `extra` files (the last one highest), the workspace's project file and the
    /// user's file.
    pub fn standard_settings(mut self, extra: &[PathBuf], command_line: Option<Layer>) -> Self {
        let workspace = self.workspace.clone().unwrap_or_else(|| PathBuf::from("."));
        self.settings_sources = settings::standard_sources(&workspace, extra, command_line);
        self
    }

    /// The permission mode, above the settings' `defaultMode` (as `--permission-mode`).
    pub fn permission_mode(mut self, mode: PermissionMode) -> Self {
        self.mode.explicit = Some(mode);
        self
    }

    /// The mode the session starts in when neither [`permission_mode`](Self::permission_mode)
    /// nor the settings say (`default` unless set here).
    pub fn starting_permission_mode(mut self, mode: PermissionMode) -> Self {
        self.mode.start = mode;
        self
    }

    /// Who answers the calls that must ask. Without one, such calls are refused with the
    /// rule that would let them run.
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// Files the workspace tools must never write, besides the settings files (kept
    /// read-only already): the MCP configuration files the embedding reads, say. Only those
    /// inside the workspace matter.
    pub fn read_only_files(mut self, files: impl IntoIterator<Item = PathBuf>) -> Self {
        self.read_only_files.extend(files);
        self
    }

    /// Places of the host a `Bash` command must never read, even beneath the system folders
    /// commands read (`/etc`, `/opt`): a state key, a token file, a store folder kept there.
    /// The MCP credentials file is added by the session itself. (Places under `/var`, `/run`
    /// and `/home` no command reads anyway.)
    pub fn private_places(mut self, places: impl IntoIterator<Item = PathBuf>) -> Self {
        self.private_places.extend(places);
        self
    }

    /// The settings file "allow always" adds its rules to (by default the workspace's
    /// project file, `.exec-host/settings.json`).
    pub fn rules_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.rules_file = Some(file.into());
        self
    }

    /// The deferral table (to replace the engine's exemption list).
    pub fn deferral(mut self, table: DeferralTable) -> Self {
        self.deferral = table;
        self
    }

    /// A sandbox to share with other sessions of the process (one engine, one compiled guest).
    pub fn sandbox(mut self, sandbox: Sandbox) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// How to set up the sandbox when none is shared.
    pub fn sandbox_options(mut self, options: SandboxOptions) -> Self {
        self.sandbox_options = options;
        self
    }

    /// The limits of every `Exec` of the session, and the result cap of flat calls.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Where the whole text of compacted results is kept (in memory by default).
    pub fn result_store(mut self, store: Arc<dyn ResultStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// No compaction: results reach the model whole, and `view_tool_call` is not declared.
    pub fn without_compaction(mut self) -> Self {
        self.store = None;
        self
    }

    /// The host has no history channel for the announcement: `prepare` appends nothing.
    pub fn without_announcements(mut self) -> Self {
        self.announcements = false;
        self
    }

    /// The model's provider searches the deferred tools itself ([`Prepared::request_deferring`]):
    /// `call` takes a direct call of a tool in the pool (through the same funnel), and
    /// `prepare` announces nothing, as the provider's search finds the tools. `Exec` stays
    /// callable; the decision of what is deferred is the same table's.
    ///
    /// [`Prepared::request_deferring`]: crate::Prepared::request_deferring
    pub fn provider_deferral(mut self) -> Self {
        self.provider_deferral = true;
        self.announcements = false;
        self
    }

    /// Starts the session: the sandbox and the MCP servers start together. A server that
    /// cannot start does not stop the session; see [`Session::start_failures`].
    /// Where `Exec`s park when every call they have open waits for a person's answer (an
    /// [`Approver`] that answers [`Approval::Park`](crate::Approval::Park)): stored there,
    /// they resume with [`Session::resume`] in this process or any other that shares the
    /// store and its key. Without one, a call the approver parks is refused.
    pub fn state_store(mut self, store: SealedStore) -> Self {
        self.state_store = Some(store);
        self
    }

    /// The conversation this session's parked Execs and kept values belong to: a handle is
    /// good only in the conversation it was given in, and a script's `load` reads only its
    /// conversation's values. 1 to 128 letters, digits, `.`, `_`, `:` and `-`. Default: a
    /// new random one.
    pub fn conversation(mut self, id: impl Into<String>) -> Self {
        self.conversation = Some(id.into());
        self
    }

    /// How long a parked Exec is kept ([`DEFAULT_PARKED_TTL`] by default).
    pub fn parked_ttl(mut self, ttl: Duration) -> Self {
        self.parked_ttl = ttl;
        self
    }

    /// The file where the embedder keeps the conversation's transcript: hooks are given it
    /// as `transcript_path`, as Claude Code gives its own.
    pub fn transcript_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.transcript_path = Some(path.into());
        self
    }

    /// How long this host's claim on an Exec it runs after it yielded lasts unless renewed
    /// ([`DEFAULT_RUNNING_LEASE`](super::DEFAULT_RUNNING_LEASE) by default): another host
    /// takes the Exec up from its last checkpoint this long after this one stopped.
    pub fn running_lease(mut self, lease: Duration) -> Self {
        self.running_lease = lease.max(Duration::from_millis(300));
        self
    }

    /// What the values a conversation's scripts keep with `store()` may take
    /// ([`ValueBounds::default`] unless set). With a state store they are kept there, for
    /// as long as an entry lasts after its last change; without one, in the session.
    pub fn value_bounds(mut self, bounds: ValueBounds) -> Self {
        self.value_bounds = bounds;
        self
    }

    pub async fn build(self) -> Result<Session, SessionError> {
        let mut sources: Vec<SettingsSource> =
            self.managed.into_iter().map(|layer| SettingsSource::Values(Box::new(layer))).collect();
        sources.extend(self.settings_sources);
        let settings = Arc::new(SettingsFiles::new(sources));
        // Read once now, so a broken file stops the session before anything starts.
        let current = settings.current()?;
        let mut tools = self.tools;
        let workspace = match &self.workspace {
            Some(dir) => {
                // The files that steer this host are out of the tools' reach: a script must
                // not widen its own rights, or the next run's.
                let mut control = settings.files().into_iter().map(Path::to_path_buf).collect::<Vec<_>>();
                control.extend(self.read_only_files.iter().cloned());
                Some(Arc::new(Workspace::open(dir)?.with_read_only_files(&control)))
            }
            None => None,
        };
        // The workspace tools work through one backend: the embedding's, else the workspace
        // on this machine; the settings may insist on a kind.
        let backend = self.backend.or_else(|| {
            let files = settings.clone();
            let network = Arc::new(move || files.current().is_ok_and(|current| current.bash_network));
            let mut private = self.private_places.clone();
            private.extend(self.server_auth.credentials.as_ref().map(|file| file.path().to_path_buf()));
            let local =
                workspace.clone().map(|w| builtin::LocalBackend::new(w).allowing_network(network).keeping_private(private));
            local.map(|local| Arc::new(local) as Arc<dyn builtin::Backend>)
        });
        if let (Some(wanted), Some(backend)) = (&current.workspace_backend, &backend)
            && let Some(why) = builtin::refused_kind(wanted, backend.kind())
        {
            return Err(SessionError::Backend { why });
        }
        if let Some(backend) = backend {
            tools.extend(builtin::all(backend));
        }
        // What the hooks and servers run stays out of the tools' writes from the start.
        let guards = workspace.as_ref().zip(self.workspace.as_deref()).map(|(workspace, given)| {
            let guards = Guards::new(workspace.clone(), given);
            guards.hooks_of(&current);
            guards
        });
        let rules_file = self.rules_file.or_else(|| self.workspace.as_ref().map(|dir| dir.join(settings::PROJECT_FILE)));
        let policy = Policy::new(workspace, self.workspace.clone(), self.mode, self.approver, rules_file, settings.clone())
            .with_transcript_path(self.transcript_path);
        if let Some(store) = &self.store {
            tools.push(Arc::new(ViewToolCall::new(store.clone())));
        }
        let mut server_auth = self.server_auth;
        if let Some(dir) = &self.workspace {
            server_auth.credentials = server_auth.credentials.map(|file| file.kept_out_of(dir));
        }
        // Each API's operations are tools from the start, like the embedding's: a description
        // is read once, and one that cannot be read stops the session with why.
        for (name, config) in &self.servers.apis {
            tools.extend(super::load_api(name, config, &server_auth).await?);
        }
        let registry = Arc::new(Registry::new(tools)?);
        let servers = McpServers::new(registry.clone(), self.server_limits, server_auth, self.input);
        let sandbox = async {
            match self.sandbox {
                Some(sandbox) => Ok(sandbox),
                None => Sandbox::with_options(self.sandbox_options.for_workspace(self.workspace.as_deref())).await,
            }
        };
        let wanted = not_denied(self.servers, &current);
        if let Some(guards) = &guards {
            wanted.servers.iter().for_each(|(name, server)| guards.add_server(name, server));
        }
        let (sandbox, start_failures) = tokio::join!(sandbox, servers.start_all(&wanted));
        let funnel = Arc::new(Funnel::new(registry.clone(), settings.clone(), policy));
        let conversation = match self.conversation {
            Some(id) => valid_conversation(id)?,
            None => random_id(),
        };
        let (parking, values) = match self.state_store {
            None => (None, ConversationValues::in_memory(Values::default(), self.value_bounds)),
            Some(store) => {
                let values = ConversationValues::in_store(store.clone(), &conversation, self.value_bounds);
                (Some(Parking { store, conversation, ttl: self.parked_ttl, lease: self.running_lease }), values)
            }
        };
        // `fetch`'s requests reach private addresses only of the hosts the settings name
        // at the moment of each request.
        let web_fetch = {
            let files = settings.clone();
            let private_hosts: PrivateHosts = Arc::new(move || {
                files.current_or_last_good().map(|current| current.web_fetch_private_hosts.clone()).unwrap_or_default()
            });
            WebFetch::new(private_hosts).map(|tool| Arc::new(tool) as Arc<dyn Tool>).map_err(Arc::from)
        };
        let inner = Inner {
            registry,
            servers,
            web_fetch,
            settings,
            deferral: self.deferral,
            sandbox: sandbox?,
            limits: self.limits,
            store: self.store,
            announcements: self.announcements,
            provider_deferral: self.provider_deferral,
            start_failures,
            guards,
            view: Mutex::new(None),
            parking,
            running: Default::default(),
            values: Arc::new(values),
        };
        Ok(Session { inner: Arc::new(inner), funnel })
    }
}

/// `id` when it is a conversation id (see [`SessionBuilder::conversation`]).
fn valid_conversation(id: String) -> Result<String, SessionError> {
    let fits = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-');
    if (1..=128).contains(&id.len()) && id.chars().all(fits) {
        return Ok(id);
    }
    Err(SessionError::Conversation { id: id.chars().take(140).collect() })
}

/// 128 random bits as 32 hex digits (from the hasher's seed when the system's randomness
/// fails: a conversation id scopes handles, it does not guard them).
pub(super) fn random_id() -> String {
    crate::support::hex::random_hex(16).unwrap_or_else(|_| {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(0);
        crate::support::hex::hex(&hasher.finish().to_le_bytes())
    })
}

/// `config` without the servers whose every tool the settings deny: starting one would
/// only run a process no call may reach.
fn not_denied(mut config: McpConfig, settings: &Settings) -> McpConfig {
    config.servers.retain(|name, _| match settings.denying_server_rule(name) {
        Some(rule) => {
            tracing::info!(server = %name, file = ?rule.source.path(), "MCP server not started: the permissions.deny rule `{}` in {} removes all its tools", rule.value, rule.source);
            false
        }
        None => true,
    });
    config
}
