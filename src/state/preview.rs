//! What a held call's card says it will change (docs/wire.md, Previews): the server's preview
//! read from the action request, its diff split into lines to colour, and the preview of an
//! edited `write_file`, diffed here against the current text the server sent.

use serde_json::Value;
use signoff_protocol::hitl::{ActionRequest, Preview};

/// What one line of a unified diff is, for its colour (its sign stays in the text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// `--- ` / `+++ ` headers and `\ No newline at end of file`.
    Meta,
    Hunk,
    Added,
    Removed,
    Context,
    /// "… N more lines": the server cut the diff there.
    More,
}

impl LineKind {
    /// The CSS modifier.
    pub fn slug(self) -> &'static str {
        match self {
            LineKind::Meta => "meta",
            LineKind::Hunk => "hunk",
            LineKind::Added => "add",
            LineKind::Removed => "del",
            LineKind::Context => "ctx",
            LineKind::More => "more",
        }
    }
}

/// The lines of a unified diff with their kinds.
pub fn diff_lines(diff: &str) -> Vec<(LineKind, &str)> {
    diff.lines()
        .map(|line| {
            let kind = if line.starts_with("--- ") || line.starts_with("+++ ") {
                LineKind::Meta
            } else if line.starts_with("@@") {
                LineKind::Hunk
            } else if line.starts_with('+') {
                LineKind::Added
            } else if line.starts_with('-') {
                LineKind::Removed
            } else if line.starts_with('\\') {
                LineKind::Meta
            } else if line.starts_with('…') {
                LineKind::More
            } else {
                LineKind::Context
            };
            (kind, line)
        })
        .collect()
}

/// "2 lines removed, 1 added", so the change is told in words as well as in colour.
pub fn diff_summary(lines: &[(LineKind, &str)]) -> String {
    let count = |kind: LineKind| lines.iter().filter(|(of, _)| *of == kind).count();
    let plural = |count: usize| if count == 1 { "line" } else { "lines" };
    let (removed, added) = (count(LineKind::Removed), count(LineKind::Added));
    let cut = if count(LineKind::More) > 0 {
        " (shown in part)"
    } else {
        ""
    };
    format!(
        "{removed} {} removed, {added} {} added{cut}",
        plural(removed),
        plural(added)
    )
}

/// A preview as the card shows it: a sentence, then the lines of a diff or of a file's start.
#[derive(Debug, Clone, PartialEq)]
pub struct PreviewView {
    pub summary: String,
    pub lines: Vec<(LineKind, String)>,
}

/// How the card shows `preview`.
pub fn preview_view(preview: &Preview) -> PreviewView {
    let summary = |text: String| PreviewView {
        summary: text,
        lines: Vec::new(),
    };
    match preview {
        Preview::Diff(diff) => {
            let lines = diff_lines(diff);
            PreviewView {
                summary: diff_summary(&lines),
                lines: lines
                    .into_iter()
                    .map(|(kind, line)| (kind, line.to_owned()))
                    .collect(),
            }
        }
        Preview::NewFile { size } => summary(format!("New file ({size} bytes)")),
        Preview::Unchanged { size } => summary(format!(
            "No change: the file already has this content ({size} bytes)"
        )),
        Preview::Delete {
            size,
            first_lines,
            more_lines,
        } => {
            let mut lines = vec![(
                LineKind::Context,
                first_lines.trim_end_matches('\n').to_owned(),
            )];
            match more_lines {
                Some(0) => {}
                Some(count) => lines.push((LineKind::More, format!("… {count} more lines"))),
                None => lines.push((LineKind::More, "…".to_owned())),
            }
            PreviewView {
                summary: format!("Deletes a file of {size} bytes. It begins:"),
                lines,
            }
        }
        Preview::Missing => summary("The file does not exist.".to_owned()),
        Preview::Binary { size } => summary(format!("Binary file ({size} bytes), not shown.")),
        Preview::TooLarge { size } => {
            summary(format!("Large file ({size} bytes), too large to compare."))
        }
        Preview::Unavailable(why) => summary(format!("No preview: {why}")),
    }
}

/// What an edited call will change instead, or why that cannot be shown; `None` when the edit
/// changes nothing the preview depends on (not a `write_file`, or no preview to begin with).
pub fn edited_preview(request: &ActionRequest, edited: &Value) -> Option<Result<Preview, String>> {
    if request.name != "write_file" {
        return None;
    }
    let original = request.preview()?;
    let path = request.args.get("path").and_then(Value::as_str)?;
    let content = edited.get("content").and_then(Value::as_str)?;
    if edited.get("path").and_then(Value::as_str) != Some(path) {
        return Some(Err(
            "The edit writes another path: no preview of that file.".to_owned(),
        ));
    }
    match (original, request.preview_base()) {
        (Preview::NewFile { .. }, _) => Some(Ok(Preview::NewFile {
            size: content.len() as u64,
        })),
        (_, Some(base)) => Some(Ok(Preview::of_write(path, base, content))),
        (Preview::Diff(_) | Preview::Unchanged { .. }, None) => Some(Err(
            "The file is too large to compare the edit here; it replaces the whole file."
                .to_owned(),
        )),
        (_, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use signoff_protocol::hitl::preview::preview_metadata;

    use super::*;

    fn request(preview: Preview, base: Option<&str>) -> ActionRequest {
        ActionRequest {
            id: "call_1".into(),
            name: "write_file".into(),
            args: json!({"path": "notes.txt", "content": "hi\n"}),
            description: None,
            server: None,
            approval_id: None,
            via: None,
            metadata: preview_metadata(&preview, base),
        }
    }

    #[test]
    fn diff_lines_are_classified_with_their_signs_kept() {
        let diff = "--- a/f\n+++ b/f\n@@ -1,2 +1 @@\n-a\n b\n+c\n\\ No newline at end of file\n… 3 more lines\n";
        let lines = diff_lines(diff);
        let kinds: Vec<LineKind> = lines.iter().map(|(kind, _)| *kind).collect();
        assert_eq!(
            kinds,
            [
                LineKind::Meta,
                LineKind::Meta,
                LineKind::Hunk,
                LineKind::Removed,
                LineKind::Context,
                LineKind::Added,
                LineKind::Meta,
                LineKind::More
            ]
        );
        assert_eq!(lines[3].1, "-a");
        assert_eq!(
            diff_summary(&lines),
            "1 line removed, 1 line added (shown in part)"
        );
    }

    #[test]
    fn previews_read_as_a_sentence_and_lines() {
        let delete = preview_view(&Preview::Delete {
            size: 23,
            first_lines: "one\ntwo\n".into(),
            more_lines: Some(8),
        });
        assert_eq!(delete.summary, "Deletes a file of 23 bytes. It begins:");
        assert_eq!(
            delete.lines,
            [
                (LineKind::Context, "one\ntwo".to_owned()),
                (LineKind::More, "… 8 more lines".to_owned())
            ]
        );
        let binary = preview_view(&Preview::Binary { size: 6 });
        assert_eq!(binary.summary, "Binary file (6 bytes), not shown.");
        assert!(binary.lines.is_empty());
    }

    #[test]
    fn an_edited_write_is_diffed_against_the_base() {
        let diff = Preview::of_write("notes.txt", "old\n", "hi\n");
        let with_base = request(diff.clone(), Some("old\n"));
        let edited = json!({"path": "notes.txt", "content": "edited\n"});
        assert_eq!(
            edited_preview(&with_base, &edited),
            Some(Ok(Preview::of_write("notes.txt", "old\n", "edited\n")))
        );
        let moved = json!({"path": "other.txt", "content": "edited\n"});
        assert!(matches!(edited_preview(&with_base, &moved), Some(Err(_))));
        let no_base = request(diff, None);
        assert!(matches!(
            edited_preview(&no_base, &edited),
            Some(Err(message)) if message.contains("too large")
        ));
        let new_file = request(Preview::NewFile { size: 3 }, None);
        assert_eq!(
            edited_preview(&new_file, &edited),
            Some(Ok(Preview::NewFile { size: 7 }))
        );
        let binary = request(Preview::Binary { size: 3 }, None);
        assert_eq!(edited_preview(&binary, &edited), None);
    }
}
