//! The transcript: bubbles keyed by item, tool cards under the item that introduced them, the
//! empty state, and auto-scroll that stops when the person scrolls up. An agent's text is
//! rendered by `crate::markdown`, from the chunk of the split point `answer` that also brings
//! its thumbs (`feedback`): [`markdown_html`].

use leptos::html::Div;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

use super::usage::AnswerUsage;
use crate::components::clamp::{is_long, ShowMore};
use crate::components::controller::ChatCtl;
use crate::components::feedback::answer_feedback;
use crate::components::lazy::{self, loaded, Loaded, Slot};
use crate::components::tools::ToolList;
use crate::components::util::copy_to_clipboard;
use crate::state::group::{rows, Row};
use crate::state::ItemKind;

/// How close to the bottom (px) still counts as "at the bottom".
const STICK_SLACK: i32 = 48;
/// The older rows of a stored chat added at a time, while the page is idle.
const EARLIER_ROWS: usize = 12;

#[component]
pub fn Transcript() -> impl IntoView {
    let ctl = expect_context::<ChatCtl>();
    let node = NodeRef::<Div>::new();
    // Written by the scroll handler, read by the effect: not a signal, nothing re-renders.
    let stick = StoredValue::new(true);
    let rows = Memo::new(move |_| ctl.view.with(|view| rows(&view.items)));
    // A stored chat opens on its last rows (`ChatCtl::shown_rows`): the person reads and
    // writes at the bottom. The older ones come in while the page is idle, a few at a time, so a
    // long chat never holds the page for long; keyed, each addition renders only what it adds.
    let hidden = Memo::new(move |_| rows.with(Vec::len).saturating_sub(ctl.shown_rows.get()));
    Effect::new(move |_| {
        if hidden.get() > 0 {
            let more = |shown: &mut usize| *shown = shown.saturating_add(EARLIER_ROWS);
            lazy::when_idle(move || ctl.shown_rows.update(more));
        } else if ctl.shown_rows.get_untracked() != usize::MAX {
            // All shown: so is every row that comes from now on.
            ctl.shown_rows.set(usize::MAX);
        }
    });
    let keys = Memo::new(move |_| {
        let skip = hidden.get();
        rows.with(|rows| {
            rows.iter()
                .skip(skip)
                .map(|row| row.key.clone())
                .collect::<Vec<_>>()
        })
    });
    let empty = move || keys.with(Vec::is_empty) && !ctl.loading.get();
    Effect::new(move |_| {
        ctl.view.track();
        hidden.track();
        if let Some(element) = node.get() {
            if stick.get_value() {
                element.set_scroll_top(element.scroll_height());
            }
        }
    });
    let on_scroll = move |_| {
        if let Some(element) = node.get() {
            let distance = element.scroll_height() - element.scroll_top() - element.client_height();
            stick.set_value(distance <= STICK_SLACK);
        }
    };
    view! {
        <div
            class="transcript"
            node_ref=node
            on:scroll=on_scroll
            on:click=copy_code
            role="log"
            aria-label="Messages"
            data-testid="transcript"
        >
            <Show when=empty>
                <div class="empty-state" data-testid="empty-state">
                    <h2>"Start a conversation"</h2>
                    <p>"Ask the agent something. Calls to risky tools wait here for your sign-off."</p>
                </div>
            </Show>
            <Show when=move || ctl.loading.get()>
                <div class="empty-state">"Loading the chat…"</div>
            </Show>
            <For each=move || keys.get() key=|key| key.clone() let:key>
                <ItemRow item_key=key rows=rows />
            </For>
        </div>
    }
}

/// Copies a code block when its Copy button (rendered inside markdown HTML) is clicked.
fn copy_code(event: web_sys::MouseEvent) {
    let Some(target) = event
        .target()
        .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
    else {
        return;
    };
    let Ok(Some(button)) = target.closest(".copy-code") else {
        return;
    };
    let code = button
        .closest(".code-block")
        .ok()
        .flatten()
        .and_then(|block| block.query_selector("code").ok().flatten())
        .and_then(|code| code.text_content());
    if let Some(code) = code {
        copy_to_clipboard(&code);
        button.set_text_content(Some("Copied"));
    }
}

#[component]
fn ItemRow(item_key: String, rows: Memo<Vec<Row>>) -> impl IntoView {
    let ctl = expect_context::<ChatCtl>();
    let lookup = item_key.clone();
    let item = Memo::new(move |_| ctl.view.with(|view| view.item(&lookup).cloned()));
    // The row's shape depends on its kind only; text changes update the bubble in place.
    let kind = Memo::new(move |_| item.with(|item| item.as_ref().map(|item| item.kind)));
    let text = move || {
        item.with(|item| {
            item.as_ref()
                .map(|item| item.text.clone())
                .unwrap_or_default()
        })
    };
    let streaming = move || item.with(|item| item.as_ref().is_some_and(|item| item.streaming));
    move || {
        match kind.get() {
        None => ().into_any(),
        Some(ItemKind::User) => {
            let key = item_key.clone();
            // A message sent while the agent worked: queued, then delivered to it.
            let delivery = Memo::new(move |_| {
                ctl.view.with(|view| {
                    if view.queued.contains(&key) {
                        Some(("queued", "Queued: the agent reads it before its next step"))
                    } else if view.delivered.contains(&key) {
                        Some(("delivered", "Delivered to the agent"))
                    } else {
                        None
                    }
                })
            });
            view! {
                <div class="row row-user">
                    <div class="bubble bubble-user" data-testid="message-user">{text}</div>
                    {move || {
                        delivery
                            .get()
                            .map(|(slug, label)| {
                                view! {
                                    <span
                                        class=format!("delivery delivery-{slug}")
                                        data-testid=format!("message-{slug}")
                                    >
                                        {label}
                                    </span>
                                }
                            })
                    }}
                </div>
            }
            .into_any()
        }
        Some(ItemKind::Agent) => {
            let row_key = item_key.clone();
            // This row's items: its own, then the tool-only items that joined it.
            let owners = Memo::new(move |_| {
                rows.with(|rows| {
                    rows.iter()
                        .find(|row| row.key == row_key)
                        .map(|row| row.items.clone())
                        .unwrap_or_default()
                })
            });
            // Folded once complete: while it streams, the newest text must stay in view.
            let long = Signal::derive(move || {
                item.with(|item| {
                    item.as_ref()
                        .is_some_and(|item| !item.streaming && is_long(&item.text))
                })
            });
            let open = RwSignal::new(false);
            view! {
                <div class="row row-agent">
                    <Show when=move || !text().is_empty()>
                        <div
                            class="bubble bubble-agent markdown"
                            class:streaming=streaming
                            class:clamped=move || long.get() && !open.get()
                            data-testid="message-agent"
                            inner_html=move || markdown_html(&text())
                        ></div>
                    </Show>
                    <ShowMore long=long open=open />
                    <ToolList owners=owners />
                    <AnswerUsage items=owners />
                    {answer_feedback(owners)}
                </div>
            }
            .into_any()
        }
        Some(ItemKind::Decision) => view! {
            <div class="row row-note">
                <div class="decision-note" data-testid="decision-note">{text}</div>
            </div>
        }
        .into_any(),
        Some(ItemKind::Canceled) => view! {
            <div class="row row-note">
                <div class="notice notice-canceled" data-testid="notice-canceled">"Task canceled"</div>
            </div>
        }
        .into_any(),
        // Folded away: the answer is what the person reads; the thinking is theirs to open.
        Some(ItemKind::Thought) => view! {
            <div class="row row-agent">
                <details class="thought" data-testid="thought">
                    <summary>"Thought"</summary>
                    <p class="thought-text">{text}</p>
                </details>
            </div>
        }
        .into_any(),
        Some(ItemKind::Failed) => view! {
            <div class="row row-note">
                <div class="notice notice-failed" role="alert" data-testid="notice-failed">{text}</div>
            </div>
        }
        .into_any(),
    }
    }
}

thread_local! {
    static MARKDOWN: Slot<fn(&str) -> String> = ArcRwSignal::new(None);
}

// An agent answer's parts: its markdown and its thumbs (`feedback`), in one chunk.
#[wasm_split_helpers::wasm_split(answer, fallible)]
fn markdown_renderer() -> Loaded<fn(&str) -> String> {
    Ok(crate::markdown::to_html)
}

/// `text` rendered as markdown (`crate::markdown::to_html`). Until the parser's chunk has
/// loaded (the first agent text asks for it) the text is shown escaped in a paragraph, as
/// written; the caller renders again when it arrives, since this reads a signal.
fn markdown_html(text: &str) -> String {
    if let Some(render) = loaded(&MARKDOWN, markdown_renderer) {
        return render(text);
    }
    let mut html = String::from("<p>");
    // Writing to a String cannot fail.
    let _ = pulldown_cmark_escape::escape_html(pulldown_cmark_escape::FmtWriter(&mut html), text);
    html.push_str("</p>");
    html
}
