//! The review of the tools held back, in the chunk of the split point `held_back` (`mod.rs`):
//! the changes read when it opens, each tool with its agent, source and pin, every place its
//! definition changed with the pinned value struck through in red and the served one in green,
//! and "Approve this definition", which names the served definition read here by its digest,
//! so that one that changed again since is refused rather than approved unseen.

use leptos::html::{Button, Dialog};
use leptos::prelude::*;
use leptos::task::spawn_local;
use signoff_protocol::rest::{ApproveToolChange, DefinitionChange, ToolChange};

use crate::api;
use crate::components::context::AppCtx;
use crate::components::util::local_time;
use crate::state::held_back::{pinned, side_text, what_changed};

/// The changes as read when the review opened: `None` while they load, else them or why they
/// could not be read. Read once: an approved tool hides in place (`Review::left` counts what
/// is left), so that a list that never changes needs no keyed diffing in the chunk.
type Read = Option<Result<Vec<ToolChange>, String>>;

/// What each tool's Approve updates in the dialog.
#[derive(Clone, Copy)]
struct Review {
    /// How many of the tools read are still held back.
    left: RwSignal<u32>,
    /// Where the focus goes when an approved tool hides with the button that had it.
    close: NodeRef<Button>,
}

/// A modal dialog (the page behind is inert); Close and Escape close it.
#[component]
pub fn ReviewDialog(open: RwSignal<bool>) -> impl IntoView {
    let app = expect_context::<AppCtx>();
    let changes = RwSignal::<Read>::new(None);
    let review = Review {
        left: RwSignal::new(0),
        close: NodeRef::new(),
    };
    // Read again on opening, rather than kept from the page's load: the notice only counts,
    // and what the operator approves should be what the server serves now.
    spawn_local(async move {
        let read = api::tools::changes().await.map_err(|err| err.to_string());
        if let Ok(list) = &read {
            review.left.set(api::tools::count(list));
            app.held_back.set(api::tools::count(list));
        }
        changes.set(Some(read));
    });
    let node = NodeRef::<Dialog>::new();
    node.on_load(|dialog: web_sys::HtmlDialogElement| {
        let _ = dialog.show_modal();
    });
    // Closed by the browser's own close (which gives the focus back to Review), then dropped.
    let close = move |_| {
        if let Some(dialog) = node.get_untracked() {
            dialog.close();
        }
    };
    let none_left =
        move || review.left.get() == 0 && changes.with(|read| matches!(read, Some(Ok(_))));
    view! {
        <dialog node_ref=node class="held-back-review" data-testid="held-back-review"
            aria-labelledby="held-back-title" on:close=move |_| open.set(false)>
            <div class="review-head">
                <h2 id="held-back-title">"Tool definitions held back"</h2>
                <button type="button" class="button small" node_ref=review.close
                    data-testid="held-back-close" on:click=close>
                    "Close"
                </button>
            </div>
            <p class="hint">
                "These tools are not offered to their agent's model or to MCP clients, and calls \
                 of them are refused: their server now describes them otherwise than when they \
                 were pinned. Read what changed. Approving makes the new definition the pinned \
                 one and revokes every “always allow” made for the tool."
            </p>
            <p data-testid="held-back-status" hidden=move || !none_left()>
                "Nothing is held back: every tool's definition is approved."
            </p>
            {move || listed(changes.get(), review)}
        </dialog>
    }
}

/// The changes read, one [`HeldBackTool`] each, or what stands in for them.
fn listed(read: Read, review: Review) -> AnyView {
    match read {
        None => view! { <p class="hint">"Reading the changes…"</p> }.into_any(),
        Some(Err(err)) => view! {
            <p class="field-error" role="alert">{format!("Could not read the changes: {err}")}</p>
        }
        .into_any(),
        Some(Ok(list)) => list
            .into_iter()
            .map(|change| view! { <HeldBackTool change=change review=review /> })
            .collect_view()
            .into_any(),
    }
}

/// One held-back tool: what it is, how it was pinned, what changed, and its Approve, with the
/// server's refusal beside it (the change stays listed, to be read again).
#[component]
fn HeldBackTool(change: ToolChange, review: Review) -> impl IntoView {
    let app = expect_context::<AppCtx>();
    let error = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    let approved = RwSignal::new(false);
    let request = ApproveToolChange {
        agent: change.agent.clone(),
        tool: change.tool.clone(),
        digest: change.served.digest.clone(),
    };
    let approve = move |_| {
        // Busy ignores the click rather than disabling the button, which would drop the focus.
        if busy.get_untracked() {
            return;
        }
        busy.set(true);
        error.set(None);
        let request = request.clone();
        spawn_local(async move {
            match api::tools::approve(&request).await {
                Ok(()) => {
                    approved.set(true);
                    on_approved(app, review);
                }
                Err(err) => error.set(Some(err.to_string())),
            }
            busy.set(false);
        });
    };
    let pin = pinned(&change.pinned_by, &local_time(&change.pinned_at));
    view! {
        <article class="held-back-tool" data-testid="held-back-tool" hidden=move || approved.get()
            data-agent=change.agent.clone() data-tool=change.tool.clone()
            aria-label=format!("{} of {}", change.tool, change.agent)>
            <h3 class="tool-name">{change.tool.clone()}</h3>
            <dl class="answers">
                <dt>"Agent"</dt>
                <dd data-testid="held-back-agent">{change.agent.clone()}</dd>
                <dt>"Source"</dt>
                <dd data-testid="held-back-source">{change.source.clone()}</dd>
                <dt>"Pinned"</dt>
                <dd data-testid="held-back-pinned">{pin}</dd>
            </dl>
            <ul class="changed-places">
                {change.changes.into_iter().map(changed_place).collect_view()}
            </ul>
            <div class="tool-actions">
                <button type="button" class="button primary" data-testid="held-back-approve"
                    aria-busy=move || busy.get().to_string() on:click=approve>
                    "Approve this definition"
                </button>
                {move || error.get().map(|text| view! {
                    <p class="field-error" role="alert" data-testid="held-back-error">{text}</p>
                })}
            </div>
        </article>
    }
}

/// One tool fewer is held back: the notice counts it. The policies made for its old definition
/// were revoked with the approval, and the agent now lists the tool as approved: the details
/// panel loads both again. The focus was on the button that hid with the tool: it goes to
/// Close, inside the dialog.
fn on_approved(app: AppCtx, review: Review) {
    review.left.update(|left| *left = left.saturating_sub(1));
    app.held_back.set(review.left.get_untracked());
    app.reload_policies();
    leptos::task::spawn_local(async move {
        // A list that cannot be read now leaves the one shown; the next load tells.
        if let Ok(agents) = crate::api::list_agents().await {
            app.agents.set(Some(Ok(agents)));
        }
    });
    if let Some(button) = review.close.get_untracked() {
        let _ = button.focus();
    }
}

/// One place where the definitions differ: its JSON pointer, then the pinned value and the
/// served one, each labelled (colour is not the only sign of which is which).
fn changed_place(place: DefinitionChange) -> impl IntoView {
    let what = what_changed(&place);
    view! {
        <li class="changed-place" data-testid="changed-place">
            <p class="changed-at">
                <code data-testid="changed-at">{place.at.clone()}</code>
                " " <span class="hint">{what}</span>
            </p>
            {place.before.as_ref().map(|before| view! {
                <p class="change-side">
                    <span class="side-label">"Before"</span>
                    <del class="change-before" data-testid="change-before">{side_text(before)}</del>
                </p>
            })}
            {place.after.as_ref().map(|after| view! {
                <p class="change-side">
                    <span class="side-label">"After"</span>
                    <ins class="change-after" data-testid="change-after">{side_text(after)}</ins>
                </p>
            })}
        </li>
    }
}
