//! The resources of MCP servers, for scripts: two tools in the pool, named as Claude Code
//! names its own so that rules written for it apply, list what the connected servers offer
//! and read one resource. They are in the registry while a connected server declares
//! resources, and answer for those servers only.
//!
//! The permission rules apply by server: a whole server's rule (`mcp__docs`) and a
//! resource tool's rule with a server (`ReadMcpResourceTool(docs)`) decide a call on that
//! server's resources; a listing of every server leaves out the servers a rule denies.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use rmcp::model::{
    ClientRequest, ListResourcesRequest, PaginatedRequestParams, ReadResourceRequest, ReadResourceRequestParams,
    ResourceContents, ServerResult,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::link::{ServerLink, json_len};
use crate::sources::tools::params::read_params;
use crate::sources::tools::{CallContext, Effect, Image, Registry, Tool, ToolDefinition, ToolOutput};
use crate::support::lock::Unpoisoned;
use crate::support::text::cut_chars;
use crate::support::vocabulary::ToolError;

/// The tool that lists the servers' resources.
pub const LIST_RESOURCES: &str = "ListMcpResourcesTool";
/// The tool that reads one resource.
pub const READ_RESOURCE: &str = "ReadMcpResourceTool";
/// Both, for the rules that take a server as their specifier.
pub const RESOURCE_TOOLS: [&str; 2] = [LIST_RESOURCES, READ_RESOURCE];

/// Most resources listed of one server; a longer list is cut and says so.
pub const MAX_RESOURCES_LISTED: usize = 1_000;
/// Most `resources/list` pages asked of one server for one listing.
pub const MAX_RESOURCE_PAGES: usize = 50;
/// Longest URI of a listed resource, in bytes: a resource with a longer one is left out
/// (cut, it could not be read back).
pub const MAX_RESOURCE_URI_BYTES: usize = 4 * 1024;
/// Longest description kept of a listed resource, and longest name, title or MIME type,
/// in characters; the rest is cut. With the URI bound, what one listing keeps of a server is
/// bounded however large its pages.
pub const MAX_RESOURCE_DESCRIPTION_CHARS: usize = 1_000;
pub const MAX_RESOURCE_LABEL_CHARS: usize = 256;

/// The connected servers that declared resources, and the two tools while there is one.
pub(crate) struct ResourceServers {
    registry: Arc<Registry>,
    links: Mutex<BTreeMap<String, ServerLink>>,
}

impl ResourceServers {
    pub(crate) fn new(registry: Arc<Registry>) -> Arc<Self> {
        Arc::new(ResourceServers { registry, links: Mutex::default() })
    }

    /// Server `name` connected and declares resources; the tools are there from now on.
    pub(crate) fn connected(self: &Arc<Self>, name: &str, link: ServerLink) {
        let mut links = self.links.locked();
        links.insert(name.to_string(), link);
        // Under the lock, so that the tools' presence follows the last change.
        self.registry.set_tools(&self.tools(), true);
    }

    /// Server `name` left; the tools leave with the last server that has resources.
    pub(crate) fn left(self: &Arc<Self>, name: &str) {
        let mut links = self.links.locked();
        if links.remove(name).is_some() && links.is_empty() {
            self.registry.set_tools(&self.tools(), false);
        }
    }

    fn tools(self: &Arc<Self>) -> [Arc<dyn Tool>; 2] {
        [
            Arc::new(ListResources { definition: list_definition(), servers: self.clone() }),
            Arc::new(ReadResource { definition: read_definition(), servers: self.clone() }),
        ]
    }

    /// The link of server `name`, or a sentence naming the servers that have resources.
    fn link(&self, name: &str) -> Result<ServerLink, ToolError> {
        let links = self.links.locked();
        links.get(name).cloned().ok_or_else(|| {
            let known: Vec<String> = links.keys().map(|server| format!("`{server}`")).collect();
            ToolError::discovery(format!(
                "no connected MCP server `{name}` offers resources; those that do: {}",
                if known.is_empty() { "none".to_string() } else { known.join(", ") }
            ))
        })
    }

    fn all(&self) -> Vec<(String, ServerLink)> {
        self.links.locked().iter().map(|(name, link)| (name.clone(), link.clone())).collect()
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListParams {
    /// Only this server's resources; every server's when left out.
    server: Option<String>,
}

/// One resource a server offers.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Listed {
    server: String,
    uri: String,
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mime_type: Option<String>,
}

#[derive(Serialize, JsonSchema)]
struct ListOutput {
    resources: Vec<Listed>,
    /// What could not be listed: a server that failed, or a list cut at its bound.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notes: Vec<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadParams {
    /// The server that offers the resource.
    server: String,
    /// The resource's URI, as the list or a tool's resource link gives it.
    uri: String,
}

/// One part of a resource's contents.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Part {
    uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    mime_type: Option<String>,
    /// The text of a text part.
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    /// For a binary part: what became of it (an image is attached for the model; other
    /// binary data is not shown).
    #[serde(skip_serializing_if = "Option::is_none")]
    binary: Option<String>,
}

#[derive(Serialize, JsonSchema)]
struct ReadOutput {
    contents: Vec<Part>,
}

fn list_definition() -> ToolDefinition {
    ToolDefinition::from_types::<ListParams, ListOutput>(
        LIST_RESOURCES,
        "List the resources the connected MCP servers offer (documents, files, records a server \
         exposes by URI): each with its server, uri and name, and title, description and \
         mimeType when given. `server` lists one server's only.",
    )
    .expect("the parameters are a struct")
    .deferred(true)
    .with_effect(Effect::ReadOnly)
}

fn read_definition() -> ToolDefinition {
    ToolDefinition::from_types::<ReadParams, ReadOutput>(
        READ_RESOURCE,
        "Read one resource of an MCP server by its server and uri (as ListMcpResourcesTool or a \
         tool's resource link gives them): its contents, text as text; an image is attached \
         for the model.",
    )
    .expect("the parameters are a struct")
    .deferred(true)
    .with_effect(Effect::ReadOnly)
}

struct ListResources {
    definition: ToolDefinition,
    servers: Arc<ResourceServers>,
}

impl Tool for ListResources {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call(&self, args: Map<String, Value>, context: CallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let params: ListParams = read_params(LIST_RESOURCES, args)?;
            let servers = match &params.server {
                Some(name) => vec![(name.clone(), self.servers.link(name)?)],
                None => {
                    let denied = |server: &str| context.resources_denied.as_ref().is_some_and(|denied| denied(server));
                    self.servers.all().into_iter().filter(|(name, _)| !denied(name)).collect()
                }
            };
            let mut output = ListOutput { resources: Vec::new(), notes: Vec::new() };
            for (name, link) in servers {
                match list(&name, &link, &mut output.resources).await {
                    Ok(None) => {}
                    Ok(Some(note)) => output.notes.push(note),
                    // Asked for one server, its failure is the call's.
                    Err(error) if params.server.is_some() => return Err(error),
                    Err(error) => output.notes.push(error.message),
                }
            }
            let value = serde_json::to_value(&output)
                .map_err(|e| ToolError::projection(format!("the list could not be encoded: {e}")))?;
            Ok(ToolOutput::structured(value))
        })
    }
}

/// Every page of server `server`'s `resources/list` into `into`, within the bounds; a note
/// when the list was cut.
async fn list(server: &str, link: &ServerLink, into: &mut Vec<Listed>) -> Result<Option<String>, ToolError> {
    let mut cursor = None;
    let mut count = 0;
    let mut long_uris = 0;
    let long_uris_note = |long_uris: usize| {
        (long_uris > 0).then(|| {
            format!("MCP server `{server}`: resources whose URI is longer than {MAX_RESOURCE_URI_BYTES} bytes are left out ({long_uris})")
        })
    };
    for _ in 0..MAX_RESOURCE_PAGES {
        let request = ListResourcesRequest::with_param(PaginatedRequestParams::default().with_cursor(cursor.take()));
        let page = match ask(link, ClientRequest::ListResourcesRequest(request), 0).await? {
            ServerResult::ListResourcesResult(page) => page,
            _ => {
                return Err(ToolError::execution(format!("MCP server `{server}` answered `resources/list` with something else")));
            }
        };
        for resource in page.resources {
            if count == MAX_RESOURCES_LISTED {
                return Ok(Some(format!(
                    "MCP server `{server}` offers more than {MAX_RESOURCES_LISTED} resources; the first are listed"
                )));
            }
            if resource.uri.len() > MAX_RESOURCE_URI_BYTES {
                long_uris += 1;
                continue;
            }
            count += 1;
            let label = |text: String| cut_chars(&text, MAX_RESOURCE_LABEL_CHARS);
            into.push(Listed {
                server: server.to_string(),
                uri: resource.uri,
                name: label(resource.name),
                title: resource.title.map(label),
                description: resource.description.map(|text| cut_chars(&text, MAX_RESOURCE_DESCRIPTION_CHARS)),
                mime_type: resource.mime_type.map(label),
            });
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(long_uris_note(long_uris)),
        }
    }
    Ok(Some(format!("MCP server `{server}` lists resources past {MAX_RESOURCE_PAGES} pages; the first pages are listed")))
}

struct ReadResource {
    definition: ToolDefinition,
    servers: Arc<ResourceServers>,
}

impl Tool for ReadResource {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call(&self, args: Map<String, Value>, _context: CallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let params: ReadParams = read_params(READ_RESOURCE, args)?;
            let link = self.servers.link(&params.server)?;
            let request = ReadResourceRequestParams::new(params.uri.clone());
            let weight = json_len(&request);
            let answer = ask(&link, ClientRequest::ReadResourceRequest(ReadResourceRequest::new(request)), weight).await?;
            let ServerResult::ReadResourceResult(result) = answer else {
                return Err(ToolError::execution(format!(
                    "MCP server `{}` answered `resources/read` with something else",
                    params.server
                )));
            };
            let mut output = ToolOutput::empty();
            let mut parts = Vec::new();
            for contents in result.contents {
                parts.push(match contents {
                    ResourceContents::TextResourceContents { uri, mime_type, text, .. } => {
                        Part { uri, mime_type, text: Some(text), binary: None }
                    }
                    ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
                        let image = mime_type.as_deref().is_some_and(|m| m.starts_with("image/"));
                        let binary = match image {
                            true => "an image, attached for the model".to_string(),
                            false => format!("{} bytes of base64 data, not shown", blob.len()),
                        };
                        if let (true, Some(mime)) = (image, &mime_type) {
                            output = output.with_image(Image::new(mime.clone(), blob));
                        }
                        Part { uri, mime_type, text: None, binary: Some(binary) }
                    }
                    _ => Part {
                        uri: params.uri.clone(),
                        mime_type: None,
                        text: None,
                        binary: Some("contents of a kind this host cannot show".into()),
                    },
                });
            }
            let value = serde_json::to_value(ReadOutput { contents: parts })
                .map_err(|e| ToolError::projection(format!("the contents could not be encoded: {e}")))?;
            output.structured = Some(value);
            Ok(output)
        })
    }
}

/// Sends a resource request to the server, signing in again once when it asks; its
/// failure as a sentence naming the server.
async fn ask(link: &ServerLink, request: ClientRequest, weight: usize) -> Result<ServerResult, ToolError> {
    let method = request.method().to_string();
    loop {
        match link.send(request.clone(), weight, None).await {
            Ok(answer) => return Ok(answer),
            Err(error) => {
                if let Some(signed_in) = link.signed_in_again(&error).await {
                    signed_in.map_err(|error| ToolError::execution(crate::support::report::error_sentence(&error)))?;
                    continue;
                }
                if matches!(error, rmcp::service::ServiceError::TransportClosed | rmcp::service::ServiceError::TransportSend(_)) {
                    link.suspect.notify_one();
                }
                return Err(ToolError::execution(format!("MCP server `{}` failed `{method}`: {error}", link.server)));
            }
        }
    }
}
