//! Entry points of the fuzz targets in `fuzz/` into parsers the crate keeps private; built
//! only with `--cfg fuzzing`, which `scripts/fuzz` sets.

pub use crate::catalogue::search::SearchParams;
pub use crate::catalogue::signature;
pub use crate::sources::mcp::stdio::read_messages;

/// Answers a `tools.ToolSearch` query from `pool`.
pub fn search(
    pool: &[crate::ToolDefinition],
    params: &crate::catalogue::search::SearchParams,
) -> crate::catalogue::search::SearchResult {
    crate::catalogue::search::Index::new(pool).search(pool, params, &Default::default())
}

/// Reads a hook's stdout, as a `PreToolUse` and as a `PostToolUse` hook's; whether it
/// asked for anything.
pub fn hook_answer(stdout: &str) -> bool {
    let answer = crate::calls::policy::hooks::pre_answer(stdout);
    let blocks = crate::calls::policy::hooks::post_block_reason(stdout).is_some();
    answer.updated_input.is_some() || answer.decision.is_some() || blocks
}

/// Reads `source` as TypeScript as the host does when the engine finds it does not
/// parse: erased, positions in a failure mapped back, a failed callee named. Whether it
/// was erased.
pub fn typescript(source: &str) -> bool {
    use crate::sandbox::runtime::{Failure, Frame, Position, SyntaxError, Uncaught};
    let at = |line, column| Position { line, column };
    let uncaught = Uncaught {
        error: "TypeError: not a function".into(),
        frames: vec![Frame::new("<anonymous>", at(1, 3)), Frame::new("f", at(u32::MAX, 9))],
    };
    let _ = crate::script::callee::name_callee(source, &uncaught);
    match crate::script::typescript::erase(source) {
        Ok(Ok(erased)) => {
            erased.remap(&mut Failure::Thrown(uncaught));
            erased.remap(&mut Failure::Syntax(SyntaxError::new("SyntaxError: x", Some(at(u32::MAX, 2)))));
            true
        }
        _ => false,
    }
}

/// Reads `data` as a sign-in reads what servers send: as an authorization server's
/// metadata, whose URLs then pass the one rule for URLs a server chose or not, and as a
/// `WWW-Authenticate` challenge, whose protected resource metadata URL is checked the
/// same way. Whether anything passed.
pub fn oauth_metadata(data: &[u8]) -> bool {
    use crate::sources::oauth;
    let metadata = serde_json::from_slice::<rmcp::transport::auth::AuthorizationMetadata>(data)
        .is_ok_and(|metadata| oauth::check_metadata(&metadata).is_ok());
    let text = String::from_utf8_lossy(data);
    let challenge = crate::sources::mcp::oauth::check_challenge(&text, "http://127.0.0.1:8000/mcp").is_ok();
    let url = oauth::server_url("a URL", &text).is_ok();
    metadata || challenge || url
}

/// Saves the "allow always" rule for tool `tool` into the settings file
/// `.exec-host/settings.json` of the workspace `dir`, which holds `existing`; what the file
/// says afterwards.
pub fn save_rule(dir: &std::path::Path, existing: &str, tool: &str) -> Result<String, Box<dyn std::error::Error>> {
    let file = std::path::Path::new(".exec-host/settings.json");
    std::fs::create_dir_all(dir.join(".exec-host"))?;
    std::fs::write(dir.join(file), existing)?;
    let rule = crate::calls::settings::Rule::exactly(tool).ok_or("no rule means exactly this tool")?;
    let workspace = cap_std::fs::Dir::open_ambient_dir(dir, cap_std::ambient_authority())?;
    let files = crate::calls::settings::SettingsFiles::new(vec![crate::calls::settings::SettingsSource::File(dir.join(file))]);
    files.add_allow_rule(Some(&workspace), file, &rule)?;
    Ok(std::fs::read_to_string(dir.join(file))?)
}
