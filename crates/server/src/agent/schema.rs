//! A small JSON Schema check of tool arguments against the tool's input schema: a model's call
//! to an MCP tool that its server would refuse fails with a message the model can act on, and a
//! person's edited arguments (`modified_args`) that do not fit are refused before anything runs.
//! It covers what MCP servers put in input schemas: `type`, `properties`, `required`,
//! `additionalProperties`, `items`, `enum`, `const`, the length and range bounds, and
//! `anyOf`/`oneOf`/`allOf`. Other keywords (`$ref`, `format`, `pattern`, ...) are not
//! checked: the server still validates, this is a first, clearer line.

use serde_json::{Map, Value};

/// Checks `value` against `schema`; the error names the first offending place, such as
/// `arguments.path: expected a string, got the number 3`.
pub fn check(schema: &Value, value: &Value) -> Result<(), String> {
    check_at(schema, value, "arguments")
}

fn check_at(schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    // `true`, `{}` and anything that is not an object accept everything; `false` nothing.
    let schema = match schema {
        Value::Object(schema) => schema,
        Value::Bool(false) => return Err(format!("{at}: no value is allowed here")),
        Value::Bool(true) | Value::Null | Value::Number(_) | Value::String(_) | Value::Array(_) => {
            return Ok(())
        }
    };
    check_type(schema, value, at)?;
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.iter().any(|candidate| same(candidate, value)) {
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            return Err(format!(
                "{at}: {} is not one of {}",
                describe(value),
                list.join(", ")
            ));
        }
    }
    if let Some(expected) = schema.get("const") {
        if !same(expected, value) {
            return Err(format!("{at}: must be {expected}, got {}", describe(value)));
        }
    }
    match value {
        Value::Object(object) => check_object(schema, object, at)?,
        Value::Array(items) => check_array(schema, items, at)?,
        Value::String(text) => check_string(schema, text, at)?,
        Value::Number(_) => check_number(schema, value, at)?,
        Value::Null | Value::Bool(_) => {}
    }
    if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
        for sub in all {
            check_at(sub, value, at)?;
        }
    }
    for keyword in ["anyOf", "oneOf"] {
        if let Some(options) = schema.get(keyword).and_then(Value::as_array) {
            let mut first_error = None;
            let matched = options.iter().any(|sub| match check_at(sub, value, at) {
                Ok(()) => true,
                Err(err) => {
                    first_error.get_or_insert(err);
                    false
                }
            });
            if !matched {
                return Err(match first_error {
                    Some(err) => format!("{err} (and no other allowed form matches)"),
                    None => format!("{at}: no allowed form matches"),
                });
            }
        }
    }
    Ok(())
}

/// JSON Schema compares numbers by value: `1` equals `1.0`.
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if a.is_number() && b.is_number() => x == y,
        _ => a == b,
    }
}

/// "the number 3", "an object", for error messages the model reads.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(flag) => format!("the boolean {flag}"),
        Value::Number(number) => format!("the number {number}"),
        Value::String(text) if text.chars().count() <= 40 => format!("the string {value}"),
        Value::String(_) => "a string".to_owned(),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "integer" => value
            .as_f64()
            .is_some_and(|number| value.is_number() && number.fract() == 0.0),
        "number" => value.is_number(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        // An unknown type name is the schema's problem, not the model's.
        _ => true,
    }
}

fn check_type(schema: &Map<String, Value>, value: &Value, at: &str) -> Result<(), String> {
    let names: Vec<&str> = match schema.get("type") {
        Some(Value::String(name)) => vec![name.as_str()],
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        Some(_) | None => return Ok(()),
    };
    if names.is_empty() || names.iter().any(|name| has_type(value, name)) {
        return Ok(());
    }
    let article = |name: &str| match name {
        "integer" | "object" | "array" => format!("an {name}"),
        other => format!("a {other}"),
    };
    let expected: Vec<String> = names.iter().map(|name| article(name)).collect();
    Err(format!(
        "{at}: expected {}, got {}",
        expected.join(" or "),
        describe(value)
    ))
}

fn check_object(
    schema: &Map<String, Value>,
    object: &Map<String, Value>,
    at: &str,
) -> Result<(), String> {
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if !object.contains_key(name) {
                return Err(format!("{at}: the required field {name:?} is missing"));
            }
        }
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    for (name, field) in object {
        let field_at = format!("{at}.{name}");
        match properties.and_then(|properties| properties.get(name)) {
            Some(sub) => check_at(sub, field, &field_at)?,
            None => match schema.get("additionalProperties") {
                Some(Value::Bool(false)) => {
                    let known: Vec<&str> = properties
                        .map(|properties| properties.keys().map(String::as_str).collect())
                        .unwrap_or_default();
                    return Err(format!(
                        "{at}: unknown field {name:?} (allowed: {})",
                        known.join(", ")
                    ));
                }
                Some(sub @ Value::Object(_)) => check_at(sub, field, &field_at)?,
                Some(_) | None => {}
            },
        }
    }
    Ok(())
}

fn check_array(schema: &Map<String, Value>, items: &[Value], at: &str) -> Result<(), String> {
    if let Some(min) = schema.get("minItems").and_then(Value::as_u64) {
        if (items.len() as u64) < min {
            return Err(format!(
                "{at}: needs at least {min} items, got {}",
                items.len()
            ));
        }
    }
    if let Some(max) = schema.get("maxItems").and_then(Value::as_u64) {
        if (items.len() as u64) > max {
            return Err(format!(
                "{at}: allows at most {max} items, got {}",
                items.len()
            ));
        }
    }
    if let Some(item_schema) = schema.get("items").filter(|items| items.is_object()) {
        for (index, item) in items.iter().enumerate() {
            check_at(item_schema, item, &format!("{at}[{index}]"))?;
        }
    }
    Ok(())
}

fn check_string(schema: &Map<String, Value>, text: &str, at: &str) -> Result<(), String> {
    let length = text.chars().count() as u64;
    if let Some(min) = schema.get("minLength").and_then(Value::as_u64) {
        if length < min {
            return Err(format!(
                "{at}: needs at least {min} characters, got {length}"
            ));
        }
    }
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
        if length > max {
            return Err(format!(
                "{at}: allows at most {max} characters, got {length}"
            ));
        }
    }
    Ok(())
}

fn check_number(schema: &Map<String, Value>, value: &Value, at: &str) -> Result<(), String> {
    let Some(number) = value.as_f64() else {
        return Ok(());
    };
    let bound = |keyword: &str| schema.get(keyword).and_then(Value::as_f64);
    if let Some(min) = bound("minimum").filter(|min| number < *min) {
        return Err(format!("{at}: must be at least {min}, got {number}"));
    }
    if let Some(max) = bound("maximum").filter(|max| number > *max) {
        return Err(format!("{at}: must be at most {max}, got {number}"));
    }
    if let Some(min) = bound("exclusiveMinimum").filter(|min| number <= *min) {
        return Err(format!("{at}: must be more than {min}, got {number}"));
    }
    if let Some(max) = bound("exclusiveMaximum").filter(|max| number >= *max) {
        return Err(format!("{at}: must be less than {max}, got {number}"));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn error(schema: Value, value: Value) -> String {
        check(&schema, &value).unwrap_err()
    }

    /// The input schema server-filesystem gives `write_file`.
    fn write_file() -> Value {
        json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
               "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
               "required": ["path", "content"]})
    }

    #[test]
    fn accepts_valid_arguments() {
        check(&write_file(), &json!({"path": "a.txt", "content": "hi"})).unwrap();
        check(&json!({}), &json!({"anything": [1, 2]})).unwrap();
        check(&json!(true), &json!(null)).unwrap();
        let sum = json!({"type": "object", "properties": {"a": {"type": "number"}, "n": {"type": "integer"}}});
        check(&sum, &json!({"a": 1.5, "n": 3})).unwrap();
        check(&sum, &json!({"n": 3.0})).unwrap();
    }

    #[test]
    fn names_the_offending_place() {
        assert_eq!(
            error(write_file(), json!({"path": "a.txt"})),
            "arguments: the required field \"content\" is missing"
        );
        assert_eq!(
            error(write_file(), json!({"path": 3, "content": "x"})),
            "arguments.path: expected a string, got the number 3"
        );
        assert_eq!(
            error(write_file(), json!("a.txt")),
            "arguments: expected an object, got the string \"a.txt\""
        );
        let closed =
            json!({"type": "object", "properties": {"a": {}}, "additionalProperties": false});
        assert_eq!(
            error(closed, json!({"b": 1})),
            "arguments: unknown field \"b\" (allowed: a)"
        );
        let nested = json!({"type": "object", "properties": {"edits": {"type": "array", "minItems": 1,
            "items": {"type": "object", "required": ["oldText"]}}}});
        assert_eq!(
            error(nested.clone(), json!({"edits": []})),
            "arguments.edits: needs at least 1 items, got 0"
        );
        assert_eq!(
            error(nested, json!({"edits": [{"oldText": "a"}, {}]})),
            "arguments.edits[1]: the required field \"oldText\" is missing"
        );
        let choice =
            json!({"type": "object", "properties": {"sortBy": {"enum": ["name", "size"]}}});
        assert_eq!(
            error(choice, json!({"sortBy": "date"})),
            "arguments.sortBy: the string \"date\" is not one of \"name\", \"size\""
        );
        let bounded =
            json!({"properties": {"count": {"type": "number", "minimum": 1, "maximum": 10}}});
        assert_eq!(
            error(bounded, json!({"count": 11})),
            "arguments.count: must be at most 10, got 11"
        );
        let integer = json!({"properties": {"n": {"type": "integer"}}});
        assert_eq!(
            error(integer, json!({"n": 1.5})),
            "arguments.n: expected an integer, got the number 1.5"
        );
        let either =
            json!({"properties": {"v": {"anyOf": [{"type": "string"}, {"type": "null"}]}}});
        check(&either, &json!({"v": null})).unwrap();
        assert_eq!(
            error(either, json!({"v": 1})),
            "arguments.v: expected a string, got the number 1 (and no other allowed form matches)"
        );
    }
}
