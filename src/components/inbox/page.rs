//! The Approvals page (`/approvals`): every batch that waits for the person, newest first, with
//! its agent, chat and age, each decidable right here with the chat's own cards (a
//! [`ChatCtl`] per batch, loaded from its chat), a link into the chat, and the marks of the
//! deadline ladder ("Reminded", "Escalated to sre"). The page comes from the chunk of the
//! split point `approvals` ([`approvals_page`]).

use leptos::prelude::*;
use signoff_protocol::rest::PendingApproval;

use super::notify::NotifySwitch;
use crate::components::context::{AppCtx, ChatKey, LiveApprovals};
use crate::components::controller::ChatCtl;
use crate::components::lazy::{loaded, Loaded, Slot};
use crate::components::tools::pending::PendingCards;
use crate::components::tools::{cards_ready, prefetch_cards};
use crate::components::util::now_ms;
use crate::state::inbox::{age, tool_names};
use crate::state::ladder::ladder_marks;
use crate::state::route::Route;

#[component]
pub fn ApprovalsPage() -> impl IntoView {
    let app = expect_context::<AppCtx>();
    let live = expect_context::<LiveApprovals>();
    let batches = Memo::new(move |_| live.inbox.with(|inbox| inbox.newest_first()));
    view! {
        <section class="approvals-page" aria-label="Approvals" data-testid="approvals-page">
            <header class="chat-header">
                <button
                    class="icon-button menu-button"
                    aria-label="Show the chats"
                    on:click=move |_| app.sidebar_open.update(|open| *open = !*open)
                >
                    "☰"
                </button>
                <h1 class="chat-title">"Approvals"</h1>
                <span class="hint" data-testid="approvals-count">
                    {move || match batches.with(Vec::len) {
                        1 => "1 batch waits".to_owned(),
                        count => format!("{count} batches wait"),
                    }}
                </span>
                <NotifySwitch />
            </header>
            <div class="approvals-list">
                <Show when=move || batches.with(Vec::is_empty)>
                    <div class="empty-state" data-testid="approvals-empty">
                        <h2>"Nothing waits for you"</h2>
                        <p>"When an agent asks before it acts, its calls show here, from every chat."</p>
                    </div>
                </Show>
                <For each=move || batches.get() key=|batch| batch.task_id.clone() let:batch>
                    <InboxBatch batch=batch />
                </For>
                <RecentlyDecided />
            </div>
        </section>
    }
}

/// What left the inbox while the page was open, and what became of it: a batch decided in
/// another tab or by another person does not vanish without a word.
#[component]
fn RecentlyDecided() -> impl IntoView {
    let live = expect_context::<LiveApprovals>();
    let recent = Memo::new(move |_| live.inbox.with(|inbox| inbox.recent.clone()));
    view! {
        <Show when=move || recent.with(|recent| !recent.is_empty())>
            <section class="recently-decided" aria-label="Recently decided" data-testid="recently-decided">
                <h2 class="hint">"Recently decided"</h2>
                <ul>
                    <For each=move || recent.get() key=|item| item.task_id.clone() let:item>
                        <li data-testid="recent-batch">
                            <span class="inbox-agent">{item.agent}</span> " "
                            <span class="inbox-asks">{item.asks}</span> ": " {item.outcome}
                        </li>
                    </For>
                </ul>
            </section>
        </Show>
    }
}

/// One waiting batch: where it comes from, and its cards.
#[component]
fn InboxBatch(batch: PendingApproval) -> impl IntoView {
    let app = expect_context::<AppCtx>();
    let (namespace, agent) = batch
        .agent
        .split_once('/')
        .map(|(namespace, agent)| (namespace.to_owned(), agent.to_owned()))
        .unwrap_or_else(|| ("default".to_owned(), batch.agent.clone()));
    let ctl = ChatCtl::new(
        ChatKey {
            namespace: namespace.clone(),
            agent: agent.clone(),
            session: Some(batch.context_id.clone()),
            nonce: 0,
        },
        app,
    );
    provide_context(ctl);
    ctl.load(prefetch_cards, cards_ready);
    let route = Route::chat(&namespace, &agent, Some(&batch.context_id));
    let href = route.path();
    let open = move |event: leptos::ev::MouseEvent| {
        event.prevent_default();
        app.navigate(route.clone());
    };
    let since = js_sys::Date::parse(&batch.since) as i64;
    let asks = crate::state::inbox::asks_for(&batch);
    let chat = if batch.title.is_empty() {
        "New chat".to_owned()
    } else {
        batch.title.clone()
    };
    let tools = tool_names(&batch).join(", ");
    // The ladder's marks, as the stream last said the batch (a reminder or an escalation says
    // it again).
    let live = expect_context::<LiveApprovals>();
    let task = batch.task_id.clone();
    let marks = Memo::new(move |_| {
        live.inbox.with(|inbox| {
            inbox
                .batch(&task)
                .and_then(|batch| batch.ladder.as_deref().map(ladder_marks))
                .unwrap_or_default()
        })
    });
    // Why the reader is asked, likewise: a hand-over to them says the batch again.
    let task = batch.task_id.clone();
    let asked = move || live.inbox.with(|inbox| inbox.asked(&task));
    view! {
        <article
            class="inbox-batch"
            data-testid="inbox-batch"
            data-task-id=batch.task_id.clone()
            aria-label=format!("{} waits: {tools}", batch.agent)
        >
            <header class="inbox-head">
                <span class="inbox-agent" data-testid="inbox-agent">{batch.agent.clone()}</span>
                <span class="inbox-asks" data-testid="inbox-asks">{asks}</span>
                <a class="inbox-chat" href=href data-testid="inbox-open-chat" on:click=open
                    title=format!("Open the chat: {chat}")>
                    {format!("in “{chat}”")}
                </a>
                <For each=move || marks.get() key=|mark| mark.clone() let:mark>
                    <span class="ladder-mark" data-testid="ladder-mark">{mark}</span>
                </For>
                <span class="inbox-age" data-testid="inbox-age">{age(since, now_ms())}</span>
            </header>
            {move || asked().map(|text| view! {
                <p class="hint" data-testid="inbox-routing">{text}</p>
            })}
            <PendingCards />
        </article>
    }
}

thread_local! {
    static PAGE: Slot<fn() -> AnyView> = ArcRwSignal::new(None);
}

#[wasm_split_helpers::wasm_split(approvals, fallible)]
fn approvals_page_view() -> Loaded<fn() -> AnyView> {
    Ok(|| view! { <ApprovalsPage /> }.into_any())
}

/// The Approvals page (`/approvals`, [`ApprovalsPage`]), from the approvals chunk.
pub fn approvals_page() -> impl IntoView {
    move || loaded(&PAGE, approvals_page_view).map(|make| make())
}
