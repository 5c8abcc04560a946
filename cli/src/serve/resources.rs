//! The downstream servers' resources as `serve` gives them to its clients: each listed with
//! its URI as its server gave it and the server's name in `_meta`, read back by URI (and by
//! that name, when the client sends it back).

use exec_host::ToolOutput;
use rmcp::model::{MetaObject, ReadResourceRequestParams, Resource, ResourceContents};
use serde_json::{Value, json};

/// `_meta` key naming the downstream server of a resource.
pub const SERVER_META: &str = "exec-host/server";

/// A resource as the session lists it (`{server, uri, name, ...}`), for a client.
pub fn listed(entry: &Value) -> Option<Resource> {
    let text = |key: &str| entry[key].as_str().map(str::to_string);
    let mut resource = Resource::new(text("uri")?, text("name")?);
    resource.title = text("title");
    resource.description = text("description");
    resource.mime_type = text("mimeType");
    let meta = serde_json::Map::from_iter([(SERVER_META.to_string(), json!(entry["server"]))]);
    resource.meta = Some(MetaObject(meta));
    Some(resource)
}

/// The server a read names in its `_meta`, when it does.
pub fn server_of(request: &ReadResourceRequestParams) -> Option<String> {
    let meta = serde_json::to_value(&request.meta).ok()?;
    meta.get(SERVER_META)?.as_str().map(str::to_string)
}

/// What `ReadMcpResourceTool` gave, as a read's contents: its text parts, and its images as
/// binary parts (other binary data the host does not keep).
pub fn contents(uri: &str, output: ToolOutput) -> Vec<ResourceContents> {
    let mut contents = Vec::new();
    let parts = output.structured.as_ref().and_then(|value| value["contents"].as_array().cloned()).unwrap_or_default();
    for part in &parts {
        if let Some(text) = part["text"].as_str() {
            contents.push(ResourceContents::TextResourceContents {
                uri: part["uri"].as_str().unwrap_or(uri).to_string(),
                mime_type: part["mimeType"].as_str().map(str::to_string),
                text: text.to_string(),
                meta: None,
            });
        }
    }
    for image in output.images {
        contents.push(ResourceContents::BlobResourceContents {
            uri: uri.to_string(),
            mime_type: Some(image.mime_type),
            blob: image.base64,
            meta: None,
        });
    }
    contents
}
