//! The reviewer's circuit breaker: after 3 denials in a row, or 10 in the task's last 50
//! reviews, the task's calls go to a person without the reviewer, for the rest of the task.
//! Pure: it reads the task's earlier verdicts, which the call records keep.

use signoff_protocol::hitl::ReviewOutcome;

/// Denials in a row that open the breaker.
pub const IN_A_ROW: usize = 3;
/// Denials within the last [`WINDOW`] reviews that open it.
pub const IN_WINDOW: usize = 10;
/// How many of the latest reviews [`IN_WINDOW`] counts over.
pub const WINDOW: usize = 50;

/// Whether the breaker is open after `reviews`, the task's live verdicts oldest first (a
/// pause is no review: once open, it stays open).
pub fn is_open(reviews: &[ReviewOutcome]) -> bool {
    let reviewed: Vec<bool> = reviews
        .iter()
        .filter(|outcome| **outcome != ReviewOutcome::Paused)
        .map(|outcome| *outcome == ReviewOutcome::Deny)
        .collect();
    let in_a_row = reviewed.iter().rev().take_while(|denied| **denied).count();
    let in_window = reviewed
        .iter()
        .rev()
        .take(WINDOW)
        .filter(|denied| **denied)
        .count();
    in_a_row >= IN_A_ROW || in_window >= IN_WINDOW
}

#[cfg(test)]
mod tests {
    use super::*;
    use ReviewOutcome::{Approve, Ask, Deny, Failed, Paused};

    #[test]
    fn three_in_a_row_or_ten_in_fifty_open_it() {
        assert!(!is_open(&[]));
        assert!(!is_open(&[Deny, Deny]));
        assert!(is_open(&[Approve, Deny, Deny, Deny]));
        assert!(!is_open(&[Deny, Deny, Ask, Deny]));
        // A failure is not a denial, and breaks the row.
        assert!(!is_open(&[Deny, Deny, Failed, Deny]));
        // Once open it stays open: the pauses after it are not reviews.
        assert!(is_open(&[Deny, Deny, Deny, Paused, Paused]));
        let mut spread: Vec<ReviewOutcome> = (0..10).flat_map(|_| [Deny, Approve]).collect();
        assert!(is_open(&spread));
        spread.pop();
        spread.remove(0);
        assert!(!is_open(&spread), "nine denials");
        // Ten denials, but the oldest fell out of the last fifty reviews.
        let mut old = vec![Deny];
        old.extend((0..9).flat_map(|_| [Deny, Approve]));
        old.extend(std::iter::repeat_n(Approve, 32));
        assert_eq!(old.len(), 51);
        assert!(!is_open(&old));
    }
}
