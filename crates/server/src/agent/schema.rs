//! Tool arguments against the tool's input schema, with the `jsonschema` crate: a model's call to
//! an MCP tool that its server would refuse fails with a message the model can act on, and a
//! person's edited arguments (`modified_args`) that do not fit are refused before anything runs.
//! Each tool's schema is compiled once, when its source lists it. Every keyword of the schema's
//! draft is checked (local `$ref`s into `$defs`/`definitions` included) except `format`, which
//! stays an annotation as in draft 2020-12 (a server that reads `"format": "uri"` loosely must not
//! see calls refused that it would take). Nothing is ever fetched: a remote `$ref` makes the
//! schema fail to compile, and a schema that fails to compile is logged and not checked here (the
//! tool's server still validates; this is a first, clearer line).

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ValidationError, Validator};
use serde_json::Value;

/// A tool's input schema, compiled once.
#[derive(Debug)]
pub struct ArgsSchema {
    /// `None` when the schema could not be compiled: then nothing is checked.
    validator: Option<Validator>,
    /// The schema itself, to name the allowed fields when an unknown one is sent.
    schema: Value,
}

impl ArgsSchema {
    /// Compiles `schema` without fetching anything; `tool` names it in the warning logged when
    /// the schema cannot be used.
    pub fn compile(tool: &str, schema: &Value) -> ArgsSchema {
        let compiled = jsonschema::options()
            .offline()
            .should_validate_formats(false)
            .build(schema);
        match compiled {
            Ok(validator) => ArgsSchema {
                validator: Some(validator),
                schema: schema.clone(),
            },
            Err(error) => {
                tracing::warn!(
                    tool,
                    %error,
                    "the tool's input schema cannot be compiled; its arguments are not checked"
                );
                ArgsSchema {
                    validator: None,
                    schema: Value::Null,
                }
            }
        }
    }

    /// Checks `value`; the error names the first offending place, such as
    /// `arguments.path: expected a string, got the number 3`.
    pub fn check(&self, value: &Value) -> Result<(), String> {
        let Some(validator) = &self.validator else {
            return Ok(());
        };
        match validator.iter_errors(value).next() {
            None => Ok(()),
            Some(error) => Err(explain(&self.schema, value, &error)),
        }
    }
}

/// Compiles `schema` and checks `value` against it, for a schema used once.
pub fn check(schema: &Value, value: &Value) -> Result<(), String> {
    ArgsSchema::compile("", schema).check(value)
}

/// One validation error in words a model or a person acts on: where, and what is wrong.
fn explain(schema: &Value, root: &Value, error: &ValidationError<'_>) -> String {
    let at = place(root, error.instance_path().as_str());
    let instance: &Value = error.instance();
    let what = match error.kind() {
        ValidationErrorKind::Type { kind } => {
            let names: Vec<String> = match kind {
                TypeKind::Single(name) => vec![name.to_string()],
                TypeKind::Multiple(names) => names.iter().map(|name| name.to_string()).collect(),
            };
            let expected: Vec<String> = names.iter().map(|name| article(name)).collect();
            format!(
                "expected {}, got {}",
                expected.join(" or "),
                describe(instance)
            )
        }
        ValidationErrorKind::Required { property } => match property.as_str() {
            Some(name) => format!("the required field {name:?} is missing"),
            None => format!("the required field {property} is missing"),
        },
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            let names: Vec<String> = unexpected.iter().map(|name| format!("{name:?}")).collect();
            let noun = if names.len() == 1 { "field" } else { "fields" };
            match allowed_fields(schema, error.schema_path().as_str()) {
                Some(allowed) => {
                    format!("unknown {noun} {} (allowed: {allowed})", names.join(", "))
                }
                None => format!("unknown {noun} {}", names.join(", ")),
            }
        }
        ValidationErrorKind::Enum { options } => {
            let list: Vec<String> = match options.as_array() {
                Some(options) => options.iter().map(Value::to_string).collect(),
                None => vec![options.to_string()],
            };
            format!("{} is not one of {}", describe(instance), list.join(", "))
        }
        ValidationErrorKind::Constant { expected_value } => {
            format!("must be {expected_value}, got {}", describe(instance))
        }
        ValidationErrorKind::FalseSchema => "no value is allowed here".to_owned(),
        ValidationErrorKind::MinItems { limit } => {
            format!("needs at least {limit} items, got {}", items(instance))
        }
        ValidationErrorKind::MaxItems { limit } => {
            format!("allows at most {limit} items, got {}", items(instance))
        }
        ValidationErrorKind::MinLength { limit } => {
            format!(
                "needs at least {limit} characters, got {}",
                characters(instance)
            )
        }
        ValidationErrorKind::MaxLength { limit } => {
            format!(
                "allows at most {limit} characters, got {}",
                characters(instance)
            )
        }
        ValidationErrorKind::Minimum { limit } => {
            format!("must be at least {limit}, got {instance}")
        }
        ValidationErrorKind::Maximum { limit } => {
            format!("must be at most {limit}, got {instance}")
        }
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            format!("must be more than {limit}, got {instance}")
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            format!("must be less than {limit}, got {instance}")
        }
        ValidationErrorKind::Pattern { pattern } => {
            format!(
                "{} does not match the pattern {pattern:?}",
                describe(instance)
            )
        }
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            // The complaint deepest in the value comes from the form that fitted best, so it is
            // the likeliest fix; among equals, the first form's.
            let deepest = context
                .iter()
                .flatten()
                .fold(None, |best, candidate| match best {
                    Some(best) if depth(best) >= depth(candidate) => Some(best),
                    Some(_) | None => Some(candidate),
                });
            return match deepest {
                Some(first) => format!(
                    "{} (and no other allowed form matches)",
                    explain(schema, root, first)
                ),
                None => format!("{at}: no allowed form matches"),
            };
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            "matches more than one of the allowed forms, and exactly one must match".to_owned()
        }
        // The rarer keywords (`not`, `multipleOf`, `uniqueItems`, `contains`, ...) in the
        // crate's own words.
        ValidationErrorKind::AdditionalItems { .. }
        | ValidationErrorKind::BacktrackLimitExceeded { .. }
        | ValidationErrorKind::RegexEngineFailure { .. }
        | ValidationErrorKind::Contains
        | ValidationErrorKind::ContentEncoding { .. }
        | ValidationErrorKind::ContentMediaType { .. }
        | ValidationErrorKind::Custom { .. }
        | ValidationErrorKind::Format { .. }
        | ValidationErrorKind::FromUtf8 { .. }
        | ValidationErrorKind::MaxProperties { .. }
        | ValidationErrorKind::MinProperties { .. }
        | ValidationErrorKind::MultipleOf { .. }
        | ValidationErrorKind::Not { .. }
        | ValidationErrorKind::PropertyNames { .. }
        | ValidationErrorKind::UnevaluatedItems { .. }
        | ValidationErrorKind::UniqueItems
        | ValidationErrorKind::Referencing(_) => error.to_string(),
    };
    format!("{at}: {what}")
}

/// `arguments.edits[1].oldText` for the JSON pointer `/edits/1/oldText`: the value itself tells
/// an array index from an object key that is made of digits.
fn place(root: &Value, pointer: &str) -> String {
    let mut at = String::from("arguments");
    let mut current = Some(root);
    for raw in pointer.split('/').skip(1) {
        let segment = raw.replace("~1", "/").replace("~0", "~");
        match current {
            Some(Value::Array(items)) => {
                current = segment
                    .parse::<usize>()
                    .ok()
                    .and_then(|index| items.get(index));
                at.push_str(&format!("[{segment}]"));
            }
            Some(Value::Object(fields)) => {
                current = fields.get(&segment);
                at.push_str(&format!(".{segment}"));
            }
            Some(_) | None => {
                current = None;
                at.push_str(&format!(".{segment}"));
            }
        }
    }
    at
}

/// How deep in the value an error is.
fn depth(error: &ValidationError<'_>) -> usize {
    error.instance_path().as_str().matches('/').count()
}

/// The fields the object schema around the keyword at `keyword_pointer` (such as
/// `/$defs/Edit/additionalProperties`) lists, or `None` when it lists none.
fn allowed_fields(schema: &Value, keyword_pointer: &str) -> Option<String> {
    let (object_pointer, _keyword) = keyword_pointer.rsplit_once('/')?;
    let properties = schema
        .pointer(object_pointer)?
        .get("properties")?
        .as_object()?;
    if properties.is_empty() {
        return None;
    }
    // Sorted: the map's own order depends on whether some crate in the build turned on
    // serde_json's `preserve_order`, and the message must not.
    let mut names: Vec<&str> = properties.keys().map(String::as_str).collect();
    names.sort_unstable();
    Some(names.join(", "))
}

fn article(name: &str) -> String {
    match name {
        "integer" | "object" | "array" => format!("an {name}"),
        other => format!("a {other}"),
    }
}

fn items(value: &Value) -> usize {
    value.as_array().map_or(0, Vec::len)
}

fn characters(value: &Value) -> usize {
    value.as_str().map_or(0, |text| text.chars().count())
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

    /// How MCP servers written with pydantic describe a list of objects: a `$ref` into `$defs`.
    #[test]
    fn follows_refs_into_defs() {
        let edit_file = json!({"type": "object", "required": ["path", "edits"],
            "properties": {"path": {"type": "string"},
                           "edits": {"type": "array", "items": {"$ref": "#/$defs/Edit"}}},
            "$defs": {"Edit": {"type": "object", "required": ["oldText", "newText"],
                "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
                "additionalProperties": false}}});
        check(
            &edit_file,
            &json!({"path": "a", "edits": [{"oldText": "x", "newText": "y"}]}),
        )
        .unwrap();
        assert_eq!(
            error(
                edit_file.clone(),
                json!({"path": "a", "edits": [{"oldText": "x", "newText": "y"}, {"oldText": "x"}]})
            ),
            "arguments.edits[1]: the required field \"newText\" is missing"
        );
        assert_eq!(
            error(
                edit_file.clone(),
                json!({"path": "a", "edits": [{"oldText": "x", "newText": 2}]})
            ),
            "arguments.edits[0].newText: expected a string, got the number 2"
        );
        assert_eq!(
            error(
                edit_file,
                json!({"path": "a", "edits": [{"oldText": "x", "newText": "y", "dryRun": true}]})
            ),
            "arguments.edits[0]: unknown field \"dryRun\" (allowed: newText, oldText)"
        );
        // Draft 7's `definitions`, as older servers write it.
        let draft7 = json!({"$schema": "http://json-schema.org/draft-07/schema#",
            "properties": {"mode": {"$ref": "#/definitions/Mode"}},
            "definitions": {"Mode": {"enum": ["fast", "safe"]}}});
        assert_eq!(
            error(draft7, json!({"mode": "slow"})),
            "arguments.mode: the string \"slow\" is not one of \"fast\", \"safe\""
        );
    }

    #[test]
    fn checks_patterns_and_exactly_one_form() {
        let named = json!({"properties": {"id": {"type": "string", "pattern": "^[a-z]+$"}}});
        assert_eq!(
            error(named, json!({"id": "A1"})),
            "arguments.id: the string \"A1\" does not match the pattern \"^[a-z]+$\""
        );
        let exactly_one =
            json!({"properties": {"n": {"oneOf": [{"type": "integer"}, {"type": "number"}]}}});
        check(&exactly_one, &json!({"n": 1.5})).unwrap();
        assert_eq!(
            error(exactly_one, json!({"n": 2})),
            "arguments.n: matches more than one of the allowed forms, and exactly one must match"
        );
        // Among the forms, the complaint from the one that fitted best.
        let either = json!({"properties": {"v": {"anyOf": [{"type": "string"},
            {"type": "object", "properties": {"x": {"type": "string"}}}]}}});
        assert_eq!(
            error(either, json!({"v": {"x": 1}})),
            "arguments.v.x: expected a string, got the number 1 (and no other allowed form matches)"
        );
    }

    /// A remote `$ref` is never fetched: the schema does not compile, and its arguments pass
    /// unchecked (the tool's server still validates them).
    #[test]
    fn never_fetches_a_remote_ref() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let remote =
            json!({"properties": {"path": {"$ref": format!("http://127.0.0.1:{port}/path.json")}}});
        let schema = ArgsSchema::compile("remote", &remote);
        assert!(schema.validator.is_none());
        check(&remote, &json!({"path": 3})).unwrap();
        // Compiling is synchronous: a fetch would have connected by now.
        assert_eq!(
            listener.accept().unwrap_err().kind(),
            std::io::ErrorKind::WouldBlock
        );
    }
}
