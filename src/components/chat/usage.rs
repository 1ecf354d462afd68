//! Token counts: the chat's total in the header, and each answer's prompt, completion and
//! total in a tip that shows on hover and on keyboard focus.

use leptos::prelude::*;

use crate::components::controller::ChatCtl;
use crate::state::Usage;

/// `12345` as `12,345`.
fn grouped(count: u64) -> String {
    let digits = count.to_string();
    let mut out = String::new();
    for (at, digit) in digits.chars().enumerate() {
        if at > 0 && (digits.len() - at) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

fn breakdown(usage: Usage) -> String {
    format!(
        "Prompt {} · Completion {} · Total {}",
        grouped(usage.prompt),
        grouped(usage.completion),
        grouped(usage.total)
    )
}

/// The chat's total, once the agent reported any counts.
#[component]
pub fn SessionUsage() -> impl IntoView {
    let ctl = expect_context::<ChatCtl>();
    let usage = Memo::new(move |_| ctl.view.with(|view| view.session_usage()));
    move || {
        usage.get().map(|usage| {
            view! {
                <span
                    class="session-usage"
                    title=format!("Tokens in this chat: {}", breakdown(usage))
                    data-testid="session-usage"
                >
                    {format!("{} tokens", grouped(usage.total))}
                </span>
            }
        })
    }
}

/// The counts of the turns that answered with `items` (a transcript row's items).
#[component]
pub fn AnswerUsage(items: Memo<Vec<String>>) -> impl IntoView {
    let ctl = expect_context::<ChatCtl>();
    let usage =
        Memo::new(move |_| items.with(|items| ctl.view.with(|view| view.answer_usage(items))));
    move || {
        usage.get().map(|usage| {
            let text = breakdown(usage);
            let label = format!("Tokens for this answer: {text}");
            view! {
                <span
                    class="answer-usage"
                    tabindex="0"
                    aria-label=label
                    data-testid="answer-usage"
                >
                    {format!("{} tokens", grouped(usage.total))}
                    <span class="usage-tip" role="tooltip" data-testid="answer-usage-tip">
                        {text}
                    </span>
                </span>
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::grouped;

    #[test]
    fn counts_are_grouped_by_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(1234567), "1,234,567");
    }
}
