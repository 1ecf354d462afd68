//! What a held call will change, as its action request's `metadata.preview` says
//! (docs/wire.md, Previews): a unified diff for a write over a text file, or a small object for
//! a new file, a file that stays the same, a delete, or a file that cannot be shown. A client
//! that does not know the key ignores it; one that reads it and finds a shape it does not know
//! gets `None`.

use serde_json::{json, Value};

use super::keys::{PREVIEW, PREVIEW_BASE};
use super::ActionRequest;
use crate::diff::{self, Caps};
use crate::model::Metadata;

/// A held call's preview.
#[derive(Debug, Clone, PartialEq)]
pub enum Preview {
    /// A write over an existing text file: the unified diff (`--- `/`+++ ` headers, hunks,
    /// capped with "… N more lines").
    Diff(String),
    /// A write where no file is: `{"new_file": true, "size": N}`, N the bytes to be written.
    NewFile { size: u64 },
    /// A write of the content the file already has: `{"unchanged": true, "size": N}`.
    Unchanged { size: u64 },
    /// A delete of a text file: `{"exists": true, "size": N, "first_lines": "…",
    /// "more_lines": K}` (K absent when the file is too large to count).
    Delete {
        size: u64,
        first_lines: String,
        more_lines: Option<u64>,
    },
    /// A delete of nothing: `{"exists": false}`.
    Missing,
    /// The file there is not UTF-8 text, so it is not shown: `{"binary": true, "size": N}`.
    Binary { size: u64 },
    /// The file there is too large to compare: `{"too_large": true, "size": N}`.
    TooLarge { size: u64 },
    /// No preview can be made (the path is a folder, leaves the sandbox, …), and why:
    /// `{"unavailable": "…"}`.
    Unavailable(String),
}

impl Preview {
    pub fn to_value(&self) -> Value {
        match self {
            Preview::Diff(text) => json!(text),
            Preview::NewFile { size } => json!({"new_file": true, "size": size}),
            Preview::Unchanged { size } => json!({"unchanged": true, "size": size}),
            Preview::Delete {
                size,
                first_lines,
                more_lines,
            } => {
                let mut value = json!({"exists": true, "size": size, "first_lines": first_lines});
                if let (Some(more), Some(object)) = (more_lines, value.as_object_mut()) {
                    object.insert("more_lines".to_owned(), json!(more));
                }
                value
            }
            Preview::Missing => json!({"exists": false}),
            Preview::Binary { size } => json!({"binary": true, "size": size}),
            Preview::TooLarge { size } => json!({"too_large": true, "size": size}),
            Preview::Unavailable(why) => json!({"unavailable": why}),
        }
    }

    /// Reads a preview; `None` for a shape this version does not know.
    pub fn from_value(value: &Value) -> Option<Preview> {
        if let Some(text) = value.as_str() {
            return Some(Preview::Diff(text.to_owned()));
        }
        let flag = |key: &str| value.get(key).and_then(Value::as_bool);
        let size = value.get("size").and_then(Value::as_u64);
        if flag("new_file") == Some(true) {
            return Some(Preview::NewFile { size: size? });
        }
        if flag("unchanged") == Some(true) {
            return Some(Preview::Unchanged { size: size? });
        }
        if flag("binary") == Some(true) {
            return Some(Preview::Binary { size: size? });
        }
        if flag("too_large") == Some(true) {
            return Some(Preview::TooLarge { size: size? });
        }
        if let Some(why) = value.get("unavailable").and_then(Value::as_str) {
            return Some(Preview::Unavailable(why.to_owned()));
        }
        match flag("exists")? {
            false => Some(Preview::Missing),
            true => Some(Preview::Delete {
                size: size?,
                first_lines: value.get("first_lines")?.as_str()?.to_owned(),
                more_lines: value.get("more_lines").and_then(Value::as_u64),
            }),
        }
    }

    /// The preview of writing `new` over the text `old` at `path`.
    pub fn of_write(path: &str, old: &str, new: &str) -> Preview {
        let diff = diff::unified(path, old, new, diff::PREVIEW_CAPS);
        if diff.is_empty() {
            Preview::Unchanged {
                size: new.len() as u64,
            }
        } else {
            Preview::Diff(diff)
        }
    }
}

/// The first lines of a file for a delete's preview, capped at `caps`, and how many lines were
/// left out.
pub fn first_lines(text: &str, caps: Caps) -> (String, u64) {
    let mut shown = String::new();
    let mut count = 0usize;
    for line in text.split_inclusive('\n') {
        if count == caps.max_lines || shown.len() + line.len() > caps.max_bytes {
            break;
        }
        shown.push_str(line);
        count += 1;
    }
    let total = text.split_inclusive('\n').count();
    (shown, (total - count) as u64)
}

/// The largest current text a preview carries for a client to diff an edited write against
/// (`metadata.preview_base`); a larger file is previewed but not carried.
pub const MAX_BASE_BYTES: usize = 64 * 1024;

/// An action request's metadata with its preview, and the current text an edit is compared
/// against (when the file is text and at most [`MAX_BASE_BYTES`]).
pub fn preview_metadata(preview: &Preview, base: Option<&str>) -> Metadata {
    let mut metadata = Metadata::new();
    metadata.insert(PREVIEW.to_owned(), preview.to_value());
    if let Some(base) = base.filter(|base| base.len() <= MAX_BASE_BYTES) {
        metadata.insert(PREVIEW_BASE.to_owned(), json!(base));
    }
    metadata
}

impl ActionRequest {
    /// The call's preview, if the server sent one this version can read.
    pub fn preview(&self) -> Option<Preview> {
        Preview::from_value(self.metadata.get(PREVIEW)?)
    }

    /// Whether an approver may edit the call's arguments (`metadata.editable`, absent: yes).
    pub fn editable(&self) -> bool {
        self.metadata.get(super::keys::EDITABLE) != Some(&serde_json::Value::Bool(false))
    }

    /// The file's current text, for diffing an edited write (absent for a new, large or binary
    /// file).
    pub fn preview_base(&self) -> Option<&str> {
        self.metadata.get(PREVIEW_BASE)?.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preview_reads_back_and_unknown_shapes_are_none() {
        for preview in [
            Preview::Diff("--- a/f\n+++ b/f\n".into()),
            Preview::NewFile { size: 3 },
            Preview::Unchanged { size: 3 },
            Preview::Delete {
                size: 10,
                first_lines: "a\n".into(),
                more_lines: Some(4),
            },
            Preview::Delete {
                size: 10,
                first_lines: "a\n".into(),
                more_lines: None,
            },
            Preview::Missing,
            Preview::Binary { size: 4 },
            Preview::TooLarge { size: 5 },
            Preview::Unavailable("a folder".into()),
        ] {
            assert_eq!(Preview::from_value(&preview.to_value()), Some(preview));
        }
        assert_eq!(
            Preview::NewFile { size: 3 }.to_value(),
            json!({"new_file": true, "size": 3})
        );
        for unknown in [
            json!({"kind": "other"}),
            json!(3),
            json!({"new_file": true}),
        ] {
            assert_eq!(Preview::from_value(&unknown), None);
        }
    }

    #[test]
    fn a_write_is_a_diff_or_unchanged_and_first_lines_are_capped() {
        assert_eq!(
            Preview::of_write("f", "a\n", "b\n"),
            Preview::Diff("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n".into())
        );
        assert_eq!(
            Preview::of_write("f", "a\n", "a\n"),
            Preview::Unchanged { size: 2 }
        );
        let text: String = (0..50).map(|line| format!("{line}\n")).collect();
        let caps = Caps {
            max_lines: 10,
            max_bytes: 1000,
        };
        assert_eq!(
            first_lines(&text, caps),
            ("0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n".into(), 40)
        );
    }

    #[test]
    fn metadata_carries_the_base_only_when_small() {
        let preview = Preview::NewFile { size: 1 };
        assert!(preview_metadata(&preview, Some("x")).contains_key(PREVIEW_BASE));
        let big = "x".repeat(MAX_BASE_BYTES + 1);
        assert!(!preview_metadata(&preview, Some(&big)).contains_key(PREVIEW_BASE));
    }
}
