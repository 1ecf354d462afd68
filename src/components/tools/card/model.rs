//! One card's reactive model, shared by its parts: what it reads of the chat (the call, the
//! batch it waits in, the person's choice in the batch's draft), the panel open under it with
//! its boxes' text, and the person's intents on it (approve, reject with a reason, edit).

use leptos::html::Div;
use leptos::prelude::*;
use serde_json::Value;
use signoff_protocol::hitl::elicitation::ELICITATION;
use signoff_protocol::hitl::question::asks_questions;
use signoff_protocol::hitl::{Dialect, Question, Verdict};
use signoff_protocol::rest::CallQuorum;

use crate::components::controller::ChatCtl;
use crate::components::tools::fields::pretty;
use crate::components::util::{reveal, shortcut_applies};
use crate::state::draft::{parse_args, reject_all, BatchDraft, Choice};
use crate::state::routing::call_quorum;
use crate::state::{PendingBatch, ToolCallView, ToolStatus};

/// What the card shows while its call waits: nothing open, the reason box, or the editor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Panel {
    None,
    Reject,
    Edit,
    /// "Always allow…": the policy's scope and matcher, before it takes effect.
    Always,
}

/// The card's state and intents. Copy: only arena handles, cheap to move into closures.
#[derive(Clone, Copy)]
pub(super) struct CardModel {
    pub ctl: ChatCtl,
    /// The call, as the chat's view has it.
    pub card: Memo<Option<ToolCallView>>,
    /// The batch this card waits in, if it does.
    pub batch: Memo<Option<PendingBatch>>,
    /// The person's choice on this call, made here and not sent yet.
    pub choice: Memo<Option<Choice>>,
    /// The arguments the person edited, sent when the call is approved.
    pub draft_args: Memo<Option<Value>>,
    /// The server's refusal of the last decision, when it named this call.
    pub refused: Memo<Option<String>>,
    /// A question call's questions: it is answered, not approved.
    pub questions: Memo<Option<Vec<Question>>>,
    pub panel: RwSignal<Panel>,
    /// The boxes' text lives apart from `panel`, so typing never re-renders the box.
    pub reason_text: RwSignal<String>,
    pub args_text: RwSignal<String>,
    pub args_error: RwSignal<Option<String>>,
}

/// The id of the call `card` holds ("" before it exists).
fn id_of(card: Memo<Option<ToolCallView>>) -> String {
    card.with(|card| {
        card.as_ref()
            .map(|card| card.id.clone())
            .unwrap_or_default()
    })
}

/// What the draft holds about the card's call, while the draft is its batch's (a stale draft
/// of another task holds nothing for it).
fn from_draft<T>(
    ctl: ChatCtl,
    card: Memo<Option<ToolCallView>>,
    batch: Memo<Option<PendingBatch>>,
    pick: fn(&BatchDraft, &str) -> Option<T>,
) -> Memo<Option<T>>
where
    T: Clone + PartialEq + Send + Sync + 'static,
{
    Memo::new(move |_| {
        let id = id_of(card);
        let task = batch.with(|batch| batch.as_ref().map(|batch| batch.task_id.clone()));
        ctl.draft.with(|draft| {
            (Some(&draft.task_id) == task.as_ref())
                .then(|| pick(draft, &id))
                .flatten()
        })
    })
}

impl CardModel {
    /// The model of the card `card_key` in the chat of `ctl`.
    pub fn new(ctl: ChatCtl, card_key: &str) -> Self {
        let lookup = card_key.to_owned();
        let card = Memo::new(move |_| ctl.view.with(|view| view.tool(&lookup).cloned()));
        let in_batch = card_key.to_owned();
        let batch = Memo::new(move |_| {
            ctl.view.with(|view| {
                view.pending
                    .as_ref()
                    .filter(|batch| batch.keys.contains(&in_batch))
                    .cloned()
            })
        });
        let questions = Memo::new(move |_| {
            card.with(|card| {
                card.as_ref()
                    .filter(|card| asks_questions(&card.name))
                    .and_then(|card| Question::list_from_args(&card.args))
            })
        });
        CardModel {
            ctl,
            card,
            batch,
            choice: from_draft(ctl, card, batch, |draft, id| draft.choices.get(id).cloned()),
            draft_args: from_draft(ctl, card, batch, |draft, id| {
                draft.edited_args.get(id).cloned()
            }),
            refused: from_draft(ctl, card, batch, |draft, id| draft.refused.get(id).cloned()),
            questions,
            panel: RwSignal::new(Panel::None),
            reason_text: RwSignal::new(String::new()),
            args_text: RwSignal::new(String::new()),
            args_error: RwSignal::new(None),
        }
    }

    /// The call's id.
    pub fn call_id(self) -> String {
        id_of(self.card)
    }

    /// The tool's name.
    pub fn name(self) -> String {
        self.card.with(|card| {
            card.as_ref()
                .map(|card| card.name.clone())
                .unwrap_or_default()
        })
    }

    /// The link of a tool server's URL question (`elicitation` in URL mode): approved by
    /// opening it, declined otherwise.
    pub fn url_to_open(self) -> Option<String> {
        self.card.with(|card| {
            let card = card.as_ref().filter(|card| card.name == ELICITATION)?;
            let url = card.args.get("url")?.as_str()?;
            (card.args.get("mode")?.as_str()? == "url").then(|| url.to_owned())
        })
    }

    /// Approves a URL question and opens its link in a new tab, inside the person's click
    /// (never by itself), without telling the page where the person came from.
    pub fn open_url(self) {
        if let (Some(url), Some(window)) = (self.url_to_open(), web_sys::window()) {
            let _ =
                window.open_with_url_and_target_and_features(&url, "_blank", "noopener,noreferrer");
        }
        self.approve();
    }

    /// A question call, answered rather than approved.
    pub fn is_question(self) -> bool {
        self.questions.with(Option::is_some)
    }

    /// A call that waits with a question at a peer whose answers approve every call (kagent
    /// 0.10): it cannot be rejected alone, so it offers no choice of its own.
    pub fn runs_with_answers(self) -> bool {
        !self.is_question()
            && self.batch.with(|batch| {
                batch.as_ref().is_some_and(|batch| {
                    batch.dialect.answers_approve_every_call()
                        && batch
                            .requests
                            .iter()
                            .any(|request| request.questions().is_some())
                })
            })
    }

    /// The status shown: the person's choice shows at once, before the server answers.
    pub fn shown(self) -> Option<ToolStatus> {
        let status = self
            .card
            .with(|card| card.as_ref().map(|card| card.status))?;
        Some(match (status, self.choice.get()) {
            (ToolStatus::PendingApproval, Some(choice)) => match choice.verdict {
                Verdict::Approve => ToolStatus::Approved,
                Verdict::Deny => ToolStatus::Rejected,
            },
            (status, _) => status,
        })
    }

    /// The verdict chosen on this card but not sent yet (its batch waits for the other cards'
    /// choices and Submit): its badge says so, unlike a call that was sent or ran.
    pub fn staged(self) -> Option<Verdict> {
        let pending = self.card.with(|card| {
            card.as_ref()
                .is_some_and(|card| card.status == ToolStatus::PendingApproval)
        });
        let choice = self.choice.get()?;
        pending.then_some(choice.verdict)
    }

    /// What the badge says: an approved call with its result says Completed (or Failed), with
    /// the decision beside it (`ToolCallView::outcome`).
    pub fn outcome(self) -> Option<(ToolStatus, Option<ToolStatus>)> {
        self.card
            .with(|card| card.as_ref().map(ToolCallView::outcome))
            .filter(|(_, decision)| decision.is_some())
            .or_else(|| self.shown().map(|status| (status, None)))
    }

    /// The only call of its batch.
    pub fn lone(self) -> bool {
        self.batch.with(|batch| {
            batch
                .as_ref()
                .is_some_and(|batch| batch.requests.len() == 1)
        })
    }

    /// The call waits in a batch and the person has not chosen here yet.
    pub fn waiting(self) -> bool {
        self.batch.with(Option::is_some) && self.choice.with(Option::is_none)
    }

    /// A decision is on its way: the controls wait for the server's answer.
    pub fn disabled(self) -> bool {
        self.ctl.deciding.get()
    }

    /// A call routed to approvers: how far its quorum has come, and whether the reader may
    /// still approve it (docs/rest.md, Approvers), as the approvals stream last said. Read
    /// where it is shown rather than kept in a memo: a memo of its own type costs the first
    /// download more than these few reads.
    pub fn quorum(self) -> Option<(CallQuorum, bool)> {
        let live = self.ctl.live?;
        let task = self
            .batch
            .with(|batch| batch.as_ref().map(|batch| batch.task_id.clone()))?;
        let me = live.me.get();
        live.inbox
            .with(|inbox| call_quorum(inbox.routing(&task), &id_of(self.card), me.as_deref()))
    }

    /// The reader may approve the call: it is not routed, or they are eligible and have not
    /// approved it yet.
    pub fn may_approve(self) -> bool {
        self.quorum().is_none_or(|(_, may)| may)
    }

    /// The call may run with edited arguments: not at a kagent peer (docs/wire.md, kagent
    /// dialect), nor when its request says it is not editable (`PendingBatch::can_edit`).
    pub fn can_edit(self) -> bool {
        let id = self.call_id();
        self.batch
            .with(|batch| batch.as_ref().is_some_and(|batch| batch.can_edit(&id)))
    }

    /// Where the call's tool comes from (`files`, an MCP server): as its request said, else as
    /// the agent's tool list says, so a call that ran without asking (a policy or grant
    /// allowed it) shows its source too.
    pub fn source(self) -> Option<String> {
        let (name, server) = self.card.with(|card| {
            card.as_ref()
                .map(|card| (card.name.clone(), card.server.clone()))
        })?;
        server.or_else(|| {
            let agent = self.ctl.agent()?;
            agent
                .tools
                .iter()
                .find(|tool| tool.name == name)
                .and_then(|tool| tool.server.clone())
        })
    }

    /// Policies live on this server: offered for its own agents' calls, not for a kagent peer.
    pub fn can_allow(self) -> bool {
        let tool = self
            .card
            .with(|card| card.as_ref().map(|card| card.name.clone()));
        self.batch.with(|batch| {
            batch
                .as_ref()
                .is_some_and(|batch| batch.dialect == Dialect::Native)
        }) && self.ctl.agent().is_some_and(|agent| {
            agent
                .tools
                .iter()
                .any(|known| Some(&known.name) == tool.as_ref())
        })
    }

    /// The batch's deadline, if it has one, as an extension last moved it.
    pub fn expires_at(self) -> Option<String> {
        let (task, own) = self.batch.with(|batch| {
            batch
                .as_ref()
                .map(|batch| (batch.task_id.clone(), batch.expires_at.clone()))
        })?;
        crate::components::tools::steps::deadline(self.ctl, &task, own)
    }

    /// Makes the draft this batch's (a stale one of another task is replaced).
    fn ensure_draft(self, batch: &PendingBatch) {
        if self
            .ctl
            .draft
            .with_untracked(|draft| draft.task_id != batch.task_id)
        {
            self.ctl.draft.set(BatchDraft::new(&batch.task_id));
        }
    }

    /// Before an approval: an open editor's arguments go into the draft, or, when they do not
    /// parse, stay in the box with the error beside them. False stops the approval.
    pub fn save_edit(self) -> bool {
        if self.panel.get_untracked() != Panel::Edit {
            return true;
        }
        match parse_args(&self.args_text.get_untracked()) {
            Ok(args) => {
                // The edit belongs to this batch's draft (a stale one is replaced first).
                let Some(batch) = self.batch.get_untracked() else {
                    return false;
                };
                self.ensure_draft(&batch);
                let id = self.call_id();
                self.ctl.draft.update(|draft| draft.edit(&id, args));
                self.panel.set(Panel::None);
                true
            }
            Err(err) => {
                self.args_error.set(Some(format!("Cannot approve: {err}")));
                false
            }
        }
    }

    /// Approves the call: chosen in the draft, and sent at once when it is its batch's only one.
    pub fn approve(self) {
        let Some(batch) = self.batch.get_untracked() else {
            return;
        };
        if self.ctl.deciding.get_untracked() || !self.may_approve() || !self.save_edit() {
            return;
        }
        self.ensure_draft(&batch);
        let id = self.call_id();
        self.ctl
            .draft
            .update(|draft| draft.choose(&id, Verdict::Approve, None));
        if batch.requests.len() == 1 {
            match self
                .ctl
                .draft
                .with_untracked(|draft| draft.approve_rest(&batch))
            {
                Ok((_, decision)) => self.ctl.decide(batch, decision),
                Err(err) => self.ctl.app().toast(err.to_string()),
            }
        }
    }

    /// Declines a URL question: its server reads no reason, so none is asked for.
    pub fn decline_url(self) {
        let Some(batch) = self.batch.get_untracked() else {
            return;
        };
        if self.ctl.deciding.get_untracked() {
            return;
        }
        self.ensure_draft(&batch);
        let id = self.call_id();
        self.ctl
            .draft
            .update(|draft| draft.choose(&id, Verdict::Deny, None));
        if batch.requests.len() == 1 {
            self.ctl.decide(batch, reject_all(None));
        }
    }

    /// Opens the reason box, empty.
    pub fn open_reject(self) {
        self.reason_text.set(String::new());
        self.panel.set(Panel::Reject);
    }

    /// Rejects the call with the reason typed: chosen in the draft, and sent at once when it is
    /// its batch's only one.
    pub fn confirm_reject(self) {
        let Some(batch) = self.batch.get_untracked() else {
            return;
        };
        if self.panel.get_untracked() != Panel::Reject || self.ctl.deciding.get_untracked() {
            return;
        }
        let reason = self.reason_text.get_untracked();
        self.ensure_draft(&batch);
        let id = self.call_id();
        self.ctl
            .draft
            .update(|draft| draft.choose(&id, Verdict::Deny, Some(&reason)));
        self.panel.set(Panel::None);
        if batch.requests.len() == 1 {
            self.ctl.decide(batch, reject_all(Some(&reason)));
        }
    }

    /// Opens the arguments editor on the arguments as they stand (edited, or the call's).
    pub fn open_editor(self) {
        let args = self
            .draft_args
            .get_untracked()
            .or_else(|| {
                self.card
                    .with_untracked(|card| card.as_ref().map(|card| card.args.clone()))
            })
            .unwrap_or_default();
        self.args_text.set(pretty(&args));
        self.args_error.set(None);
        self.panel.set(Panel::Edit);
    }

    /// Takes back the choice made here, so the card asks again.
    pub fn undo(self) {
        let id = self.call_id();
        self.ctl.draft.update(|draft| draft.undo(&id));
    }

    /// A waiting card's keys: A approves, R opens the reason box.
    pub fn on_keydown(self, event: web_sys::KeyboardEvent) {
        if !shortcut_applies(&event)
            || !self.waiting()
            || self.is_question()
            || self.runs_with_answers()
        {
            return;
        }
        match event.key().as_str() {
            "a" | "A" => {
                event.prevent_default();
                event.stop_propagation();
                self.approve();
            }
            "r" | "R" => {
                event.prevent_default();
                event.stop_propagation();
                self.open_reject();
            }
            _ => {}
        }
    }

    /// The card a batch without a bar is decided from (a lone call, or the question whose
    /// Submit decides the pause) comes into view when it arrives; a batch's bar does otherwise.
    /// The focus stays where the person is typing.
    pub fn reveal_when_it_decides(self, node: NodeRef<Div>) {
        Effect::new(move |_| {
            let id = self.call_id();
            let decides = self.batch.with(|batch| {
                batch.as_ref().and_then(PendingBatch::call_to_reveal) == Some(id.as_str())
            });
            if decides && self.waiting() && !self.ctl.on_approvals_page() {
                if let Some(element) = node.get() {
                    reveal(&element);
                }
            }
        });
    }

    /// The draft knows which editors are open, so the batch's Approve all waits for them.
    pub fn track_editing(self) {
        Effect::new(move |_| {
            let open = self.panel.get() == Panel::Edit;
            let id = self.call_id();
            let Some(batch) = self.batch.get_untracked() else {
                return;
            };
            let known = self.ctl.draft.with_untracked(|draft| {
                draft.task_id == batch.task_id && draft.editing.contains(&id)
            });
            if known != open {
                self.ensure_draft(&batch);
                self.ctl.draft.update(|draft| draft.set_editing(&id, open));
            }
        });
    }
}
