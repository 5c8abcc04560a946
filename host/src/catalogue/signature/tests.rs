use super::*;
use serde_json::json;

#[test]
fn renders_required_optional_and_descriptions() {
    let schema = json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Where.\nSecond line."},
            "limit": {"type": ["integer", "null"]},
            "mode": {"enum": ["a", "b"]},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["path"]
    });
    let text = call_form("read", &schema, None);
    assert_eq!(
        text,
        "tools.read(args: {\n  /**\n   * Where.\n   * Second line.\n   */\n  path: string;\n  limit?: number | null;\n  mode?: \"a\" | \"b\";\n  tags?: string[];\n}): Promise<unknown>"
    );
}

#[test]
fn names_that_are_not_identifiers_use_brackets() {
    let text = call_form("mcp__srv__get-user.profile", &json!({"type": "object"}), Some(&json!({"type": "object"})));
    assert_eq!(
        text, "tools[\"mcp__srv__get-user.profile\"](args?: {}): Promise<{}>",
        "nothing required: the argument may be left out"
    );
    let field = type_of(&json!({"type": "object", "properties": {"user-id": {"type": "string"}}, "required": ["user-id"]}));
    assert_eq!(field, "{\n  \"user-id\": string;\n}");
}

#[test]
fn references_resolve_and_cycles_stop_at_the_first_repeat() {
    let schema = json!({
        "type": "object",
        "properties": {"node": {"$ref": "#/$defs/Node"}},
        "$defs": {"Node": {
            "type": "object",
            "description": "One link.",
            "properties": {"value": {"type": "integer"}, "next": {"$ref": "#/$defs/Node"}},
            "required": ["value"]
        }}
    });
    assert_eq!(
        type_of(&schema),
        "{\n  /** One link. */\n  node?: {\n    value: number;\n    /** One link. */\n    next?: unknown;\n  };\n}",
        "the description comes from the definition; the cycle renders as unknown"
    );
    let draft7 =
        json!({"type": "object", "properties": {"a": {"$ref": "#/definitions/A"}}, "definitions": {"A": {"type": "string"}}});
    assert_eq!(type_of(&draft7), "{\n  a?: string;\n}");
    assert_eq!(type_of(&json!({"$ref": "https://example.com/schema.json"})), "unknown");
    assert_eq!(type_of(&json!({"$ref": "#/$defs/missing"})), "unknown");
}

#[test]
fn unions_intersections_arrays_and_tuples() {
    let schema = json!({
        "type": "object",
        "properties": {
            "either": {"anyOf": [{"type": "string"}, {"type": "number"}]},
            "one": {"oneOf": [{"const": "x"}, {"type": "null"}]},
            "list": {"type": "array", "items": {"type": ["string", "number"]}},
            "objects": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}}}},
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}], "items": false},
            "open": {"type": "array", "prefixItems": [{"type": "string"}]},
            "both": {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"anyOf": [{"type": "string"}, {"type": "number"}]}]},
            "nullable": {"type": "string", "nullable": true},
            "any": {},
            "nothing": false,
        }
    });
    let text = type_of(&schema);
    for expected in [
        "either?: string | number;",
        "one?: \"x\" | null;",
        "list?: (string | number)[];",
        "objects?: {\n    id?: string;\n  }[];",
        "pair?: [string, number];",
        "open?: [string, ...unknown[]];",
        "both?: {\n    a?: string;\n  } & (string | number);",
        "nullable?: string | null;",
        "any?: unknown;",
        "nothing?: never;",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
}

#[test]
fn variants_beside_a_type_of_its_own() {
    let either_field = json!({
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "anyOf": [{"required": ["a"]}, {"required": ["b"]}]
    });
    assert_eq!(type_of(&either_field), "{\n  a?: string;\n  b?: string;\n}", "constraint-only variants add nothing");
    let extended = json!({
        "type": "object",
        "properties": {"kind": {"type": "string"}},
        "oneOf": [
            {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]},
            {"type": "object", "properties": {"y": {"type": "number"}}, "required": ["y"]}
        ]
    });
    assert_eq!(
        type_of(&extended),
        "{\n  kind?: string;\n} & ({\n  x: number;\n} | {\n  y: number;\n})",
        "variants that are types of their own intersect with the base"
    );
    assert_eq!(type_of(&json!({"type": "string", "anyOf": [{"minLength": 1}, {"format": "email"}]})), "string");
    assert_eq!(type_of(&json!({"anyOf": [{"type": "string"}, {}]})), "unknown", "without a base every variant counts");
}

#[test]
fn index_signatures_and_empty_objects() {
    assert_eq!(type_of(&json!({"type": "object"})), "{}");
    assert_eq!(type_of(&json!({"type": "object", "additionalProperties": false})), "{}");
    assert_eq!(
        type_of(&json!({"type": "object", "additionalProperties": {"type": "integer"}})),
        "{\n  [key: string]: number;\n}"
    );
    assert_eq!(
        type_of(&json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": true})),
        "{\n  a?: string;\n  [key: string]: unknown;\n}"
    );
    assert_eq!(
        type_of(&json!({"type": "object", "patternProperties": {"^x-": {"type": "string"}}})),
        "{\n  [key: string]: string;\n}"
    );
    assert_eq!(
        type_of(&json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}})),
        "{\n  a?: string;\n  [key: string]: unknown;\n}",
        "named fields must fit the index signature"
    );
}

#[test]
fn descriptions_stay_verbatim_and_cannot_close_the_comment() {
    let long = "Pick one:\n- `fast`: skips checks\n- `safe`: checks everything, slower\n\nDefaults to safe.";
    let text = type_of(&json!({"type": "object", "properties": {"mode": {"type": "string", "description": long}}}));
    assert_eq!(
        text,
        "{\n  /**\n   * Pick one:\n   * - `fast`: skips checks\n   * - `safe`: checks everything, slower\n   *\n   * Defaults to safe.\n   */\n  mode?: string;\n}"
    );
    let sneaky = type_of(&json!({"type": "object", "properties": {"a": {"type": "string", "description": "end */ here"}}}));
    assert!(sneaky.contains("end *\\/ here"), "{sneaky}");
}

#[test]
fn what_cannot_be_expressed_is_unknown_never_a_crash() {
    for schema in [
        json!(null),
        json!(3),
        json!("string"),
        json!({"type": "wat"}),
        json!({"not": {"type": "string"}}),
        json!({"enum": [{"a": 1}]}),
    ] {
        assert_eq!(type_of(&schema), "unknown", "{schema}");
    }
    // Definitions that each use the next one twice: 2^40 expansions if nothing stopped it.
    let mut defs = Map::new();
    for i in 0..40 {
        let next = json!({"$ref": format!("#/$defs/D{}", i + 1)});
        defs.insert(format!("D{i}"), json!({"type": "object", "properties": {"a": next.clone(), "b": next}}));
    }
    defs.insert("D40".into(), json!({"type": "string"}));
    let bomb = json!({"$ref": "#/$defs/D0", "$defs": defs});
    let text = type_of(&bomb);
    assert!(text.len() < 4_000_000, "the rendering is bounded: {} bytes", text.len());
    assert!(text.contains("unknown"));
    // Fan-out with long descriptions: bounded by the text budget, the cut said in a comment.
    let mut defs = Map::new();
    let long = "x".repeat(10_000);
    for i in 0..20 {
        let next = json!({"$ref": format!("#/$defs/D{}", i + 1), "description": long});
        defs.insert(format!("D{i}"), json!({"type": "object", "properties": {"a": next.clone(), "b": next}}));
    }
    defs.insert("D20".into(), json!({"type": "string"}));
    let text = type_of(&json!({"$ref": "#/$defs/D0", "$defs": defs}));
    assert!(text.len() < 2 * MAX_TEXT_BYTES, "{} bytes", text.len());
    assert!(text.contains("/* more fields: this schema is larger than a signature shows */"));
    // Nesting deeper than the renderer goes.
    let mut deep = json!({"type": "string"});
    for _ in 0..100 {
        deep = json!({"type": "array", "items": deep});
    }
    let text = type_of(&deep);
    assert!(text.starts_with("unknown[][][]"), "{text}");
}

#[test]
fn members_are_indented_for_declaration_files() {
    let schema = json!({"type": "object", "properties": {"q": {"type": "string", "description": "What."}}, "required": ["q"]});
    assert_eq!(
        member("find-it", &schema, None, 1),
        "  \"find-it\"(args: {\n    /** What. */\n    q: string;\n  }): Promise<unknown>;"
    );
}
