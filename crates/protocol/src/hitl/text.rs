//! Text decisions (docs/wire.md, Text decisions): when a paused task gets plain text instead
//! of a decision DataPart, only a clear approval approves, a blank text or one of only polite words
//! ("ok") decides nothing (the person is asked again), and other text rejects with itself as the
//! reason, so the model reads what the person said instead.

use super::{Decision, DecisionError};
use crate::model::Message;

/// Words that approve when a paused task gets plain text (docs/wire.md, Text decisions).
/// Approval must be clear, so the text may hold only these and a few polite words.
const APPROVE_WORDS: [&str; 5] = ["approve", "approved", "yes", "proceed", "continue"];
const POLITE_WORDS: [&str; 8] = [
    "please", "ok", "okay", "go", "ahead", "sure", "thanks", "all",
];
/// Words that reject; any of them (without an approve word) rejects, with the text as reason.
const REJECT_WORDS: [&str; 5] = ["deny", "reject", "no", "cancel", "stop"];

/// The text's words: runs of ASCII letters and digits. The decision words are ASCII, so any
/// other character only separates them; and the UI, which says before sending what a reply will
/// decide, then carries no Unicode tables (about 15 KB of gzip wasm).
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty())
}

impl Decision {
    /// The text fallback (docs/wire.md, Text decisions): approve only when the text says nothing
    /// but approval ("yes", "Approved.", "yes, please proceed"); reject when it holds a reject
    /// word and no approve word, with the whole text as the reason the model reads. Anything
    /// else is no decision.
    pub fn from_text(text: &str) -> Option<Decision> {
        let words: Vec<String> = words(text).map(str::to_ascii_lowercase).collect();
        let approves = words
            .iter()
            .any(|word| APPROVE_WORDS.contains(&word.as_str()));
        let rejects = words
            .iter()
            .any(|word| REJECT_WORDS.contains(&word.as_str()));
        let only_approval = words.iter().all(|word| {
            APPROVE_WORDS.contains(&word.as_str()) || POLITE_WORDS.contains(&word.as_str())
        });
        match (approves, rejects) {
            (true, false) if only_approval => Some(Decision::approve_all()),
            (false, true) => Some(Decision::deny_all(Some(text.trim().to_owned()))),
            (true, false) | (true, true) | (false, false) => None,
        }
    }

    /// A person's reply to a paused task: a text decision when [`Decision::from_text`] finds
    /// one; else any other text ("write it to drafts/notes.txt instead", "yes but only the
    /// first") rejects every pending call with the text as the reason, so the model reads it
    /// and goes on. `None` (ask again) for a blank text, and for one of only polite words ("ok",
    /// "sure, go ahead"), which leans toward approval without saying it: rejecting it would do
    /// the opposite of what the person likely meant.
    pub fn from_reply(text: &str) -> Option<Decision> {
        if let Some(decision) = Decision::from_text(text) {
            return Some(decision);
        }
        let only_polite =
            words(text).all(|word| POLITE_WORDS.contains(&word.to_ascii_lowercase().as_str()));
        if only_polite {
            return None;
        }
        Some(Decision::deny_all(Some(text.trim().to_owned())))
    }

    /// The message's decision: its DataPart, else its text read as a reply
    /// ([`Decision::from_reply`]); an error when neither decides. With no pause to name,
    /// [`Decision::from_message_on`] without its requests.
    pub fn from_message_or_text(message: &Message) -> Result<Decision, DecisionError> {
        Decision::from_message_on(message, &[]).map(|(decision, _)| decision)
    }
}
