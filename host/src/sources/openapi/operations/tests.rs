use serde_json::json;

use super::*;

fn document(paths: Value) -> Document {
    let root = json!({
        "openapi": "3.0.3",
        "info": { "title": "t", "version": "1" },
        "paths": paths,
        "components": {
            "schemas": { "Pet": { "type": "object", "required": ["name"], "properties": { "name": { "type": "string" }, "tag": { "type": "string", "nullable": true } } } },
            "parameters": { "Limit": { "name": "limit", "in": "query", "schema": { "type": "integer", "minimum": 1 } } },
            "requestBodies": { "NewPet": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Pet" } } } } }
        }
    });
    Document::parse(&root.to_string(), "pets.json").unwrap()
}

#[test]
fn an_operation_takes_its_parameters_by_name_and_its_body_and_gives_its_answer_schema() {
    let document = document(json!({
        "/pets/{petId}": {
            "parameters": [ { "name": "petId", "in": "path", "required": true, "schema": { "type": "string" }, "description": "The pet." } ],
            "get": {
                "operationId": "pets/get-one", "summary": "Get a pet", "tags": ["pets"],
                "parameters": [ { "$ref": "#/components/parameters/Limit" }, { "name": "petId", "in": "query", "schema": { "type": "boolean" } },
                                { "name": "X-Trace", "in": "header", "schema": { "type": "string" } } ],
                "responses": { "200": { "description": "ok", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Pet" } } } } }
            },
            "put": { "operationId": "updatePet", "requestBody": { "$ref": "#/components/requestBodies/NewPet" }, "responses": { "204": { "description": "done" } } }
        }
    }));
    let (found, skipped) = operations(&document).unwrap();
    assert!(skipped.is_empty(), "{skipped:?}");
    let get = &found[0];
    assert_eq!((get.name.as_str(), get.method.as_str(), get.effect), ("pets_get_one", "GET", Effect::ReadOnly));
    assert_eq!(get.tags, ["pets"]);
    assert_eq!(get.description, "Get a pet. GET /pets/{petId}", "what it does first, for search");
    let keys: Vec<(&str, &str, Location)> =
        get.parameters.iter().map(|p| (p.name.as_str(), p.key.as_str(), p.location)).collect();
    assert_eq!(
        keys,
        [
            ("petId", "petId", Location::Path),
            ("limit", "limit", Location::Query),
            ("petId", "query_petId", Location::Query),
            ("X-Trace", "X-Trace", Location::Header)
        ]
    );
    assert_eq!(get.input_schema["required"], json!(["petId"]));
    assert_eq!(get.input_schema["properties"]["petId"]["description"], "The pet.");
    assert_eq!(get.input_schema["properties"]["limit"]["minimum"], 1);
    assert_eq!(get.output_schema.as_ref().unwrap()["properties"]["tag"]["type"], json!(["string", "null"]));
    let put = &found[1];
    assert_eq!((put.name.as_str(), put.effect), ("updatePet", Effect::Other));
    assert_eq!(put.body, Some(Body { media_type: "application/json".into(), kind: BodyKind::Json, required: true }));
    assert_eq!(put.input_schema["required"], json!(["petId", "body"]));
    assert_eq!(put.input_schema["properties"]["body"]["required"], json!(["name"]));
    assert_eq!(put.output_schema, None);
}

#[test]
fn names_are_safe_unique_and_stable_whatever_the_ids() {
    let respond = json!({ "200": { "description": "ok" } });
    let document = document(json!({
        "/a": { "get": { "operationId": "../../etc/passwd", "responses": respond }, "post": { "operationId": "same", "responses": respond } },
        "/b": { "get": { "operationId": "same", "responses": respond }, "post": { "operationId": "\u{1b}[31mred\"quote'", "responses": respond } },
        "/c/{id}/d": { "get": { "parameters": [ { "name": "id", "in": "path", "required": true } ], "responses": respond },
                       "delete": { "operationId": "x".repeat(300), "parameters": [ { "name": "id", "in": "path", "required": true } ], "responses": respond } },
        "/e": { "get": { "operationId": "___", "responses": respond } }
    }));
    let (found, _) = operations(&document).unwrap();
    let names: Vec<&str> = found.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names[..5], ["etc_passwd", "same", "same_2", "31mred_quote", "get_c_id_d"]);
    assert_eq!(names[5].len(), MAX_OPERATION_NAME_LEN);
    assert!(names[5].starts_with("xxxx"));
    assert_eq!(names[6], "get_e");
    for name in &names {
        let tool = format!("api__src__{name}");
        assert!(crate::sources::tools::ToolDefinition::new(tool, "", json!({ "type": "object" })).is_ok(), "{name}");
    }
    assert_eq!(operations(&document).unwrap().0.iter().map(|o| o.name.clone()).collect::<Vec<_>>(), names, "stable");
}

#[test]
fn what_cannot_be_called_is_skipped_with_its_reason() {
    let respond = json!({ "200": { "description": "ok" } });
    let document = document(json!({
        "/upload": { "post": { "operationId": "upload", "requestBody": { "content": { "multipart/form-data": {}, "image/png": {} } }, "responses": respond } },
        "/u/{user}": { "get": { "operationId": "noParam", "responses": respond } },
        "/r": { "get": { "operationId": "remote", "parameters": [ { "$ref": "https://evil.example/p.json" } ], "responses": respond } },
        "/ok": { "get": { "operationId": "fine", "responses": respond } }
    }));
    let (found, skipped) = operations(&document).unwrap();
    assert_eq!(found.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(), ["fine"]);
    let reasons: Vec<String> = skipped.iter().map(|s| format!("{}: {}", s.operation, s.reason)).collect();
    assert!(reasons[0].starts_with("POST /upload (upload): its request body is sent only as multipart/form-data"), "{reasons:?}");
    assert!(reasons[1].contains("names `{user}`, which no path parameter describes"), "{reasons:?}");
    assert!(reasons[2].contains("outside the description"), "{reasons:?}");
}

#[test]
fn a_description_of_too_many_operations_is_refused_whole() {
    for count in [MAX_OPERATIONS + 1, 100_000] {
        let mut paths = Map::new();
        for i in 0..count {
            paths.insert(format!("/p{i}"), json!({ "get": { "responses": {} } }));
        }
        let error = operations(&document(Value::Object(paths))).unwrap_err().to_string();
        assert_eq!(error, format!("pets.json: {count} operations, more than the {MAX_OPERATIONS} one source may have"));
    }
}
