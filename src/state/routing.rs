//! Batches routed to approvers (docs/rest.md, Approvers), in words: who asked, why the reader
//! is asked, how far each call's quorum has come, and which approvals an edit voided; and
//! whether the reader may still approve a call. Pure, so it is tested natively.

use signoff_protocol::hitl::{Decision, DecisionKind, Verdict};
use signoff_protocol::rest::{ApprovalRouting, CallQuorum};

use super::compose::{pending_calls, Reply, SendEffect};
use super::view::PendingBatch;

/// An approvers list as a person reads it: `group:sre` and `user:dave` are "sre or dave".
pub fn approvers_label(entries: &[String]) -> String {
    let mut names: Vec<&str> = Vec::with_capacity(entries.len());
    for entry in entries {
        names.push(
            entry
                .split_once(':')
                .map_or(entry.as_str(), |(_, name)| name),
        );
    }
    names.join(" or ")
}

/// What let the `at`th of `approved_by` approve, in words, as the server recorded it: "in
/// sre", "named approver", "the requester", and for an entry the agents file does not list for
/// the call, "asked by escalation" (the batch escalated to it) or else "asked by hand-over";
/// `None` when the server said nothing. So someone named by another route never reads as a
/// member of the group the call waits for.
fn route(call: &CallQuorum, at: usize) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    for entry in call.approved_via.get(at)? {
        let part = match (entry.split_once(':'), call.approvers.contains(entry)) {
            _ if entry == "requester" => "the requester".to_owned(),
            (Some(("group", name)), true) => format!("in {name}"),
            (_, true) => "named approver".to_owned(),
            (_, false) if call.escalated_to.contains(entry) => "asked by escalation".to_owned(),
            (_, false) => "asked by hand-over".to_owned(),
        };
        if !parts.contains(&part) {
            parts.push(part);
        }
    }
    (!parts.is_empty()).then(|| parts.join(" and "))
}

/// The entries a call still waits for: its approvers and those its batch escalated to (each
/// once), less anyone named by user entry who approved it. A group stays: another of its
/// members may still approve.
fn entries_left(call: &CallQuorum) -> impl Iterator<Item = &String> {
    let escalated = call
        .escalated_to
        .iter()
        .filter(|entry| !call.approvers.contains(entry));
    call.approvers.iter().chain(escalated).filter(|entry| {
        entry
            .strip_prefix("user:")
            .is_none_or(|name| !call.approved_by.iter().any(|by| by == name))
    })
}

/// Whom a call still waits for, in words.
fn still_waiting_for(call: &CallQuorum) -> String {
    let left: Vec<String> = entries_left(call).cloned().collect();
    approvers_label(&left)
}

/// The line of a card whose call waits for approvers: "Waiting for sre: 0 of 2", and once some
/// approved, who did and by which route, then what is left: "Approved by dave (named
/// approver): 1 of 2; waiting for 1 more of sre"; `None` when the requester decides alone.
pub fn waiting_for(call: &CallQuorum) -> Option<String> {
    if call.approvers.is_empty() {
        return None;
    }
    if call.approved_by.is_empty() {
        return Some(format!(
            "Waiting for {}: 0 of {}",
            approvers_label(&call.approvers),
            call.quorum
        ));
    }
    let by: Vec<String> = call
        .approved_by
        .iter()
        .enumerate()
        .map(|(at, who)| match route(call, at) {
            Some(route) => format!("{who} ({route})"),
            None => who.clone(),
        })
        .collect();
    let mut text = format!(
        "Approved by {}: {} of {}",
        by.join(", "),
        call.approved_by.len(),
        call.quorum
    );
    let more = (call.quorum as usize).saturating_sub(call.approved_by.len());
    if more > 0 {
        text.push_str(&format!(
            "; waiting for {more} more of {}",
            still_waiting_for(call)
        ));
    }
    Some(text)
}

/// What a card says when an edit voided approvals: they were for other arguments.
pub fn voided_text(call: &CallQuorum) -> Option<String> {
    if call.voided.is_empty() {
        return None;
    }
    Some(format!(
        "The arguments were edited: the approval of {} no longer counts.",
        call.voided.join(", ")
    ))
}

/// Who asked and why the reader is asked: "default/deploy asks for alice · you are asked as
/// group sre", or for the requester under a two-person rule, that others approve.
pub fn asked_text(agent: &str, routing: &ApprovalRouting) -> String {
    let why = match routing.eligible_by.as_slice() {
        [] => "others approve; you may reject or stop it".to_owned(),
        [only] if only == "requester" => "you may approve it".to_owned(),
        entries => format!("you are asked as {}", entries.join(", ").replace(':', " ")),
    };
    format!("{agent} asks for {} · {why}", routing.requested_by)
}

/// The quorum of `call_id` in a batch with `routing` and whether `me` may still approve it
/// (eligible, and not approved already); `None` for a batch not routed.
pub fn call_quorum(
    routing: Option<&ApprovalRouting>,
    call_id: &str,
    me: Option<&str>,
) -> Option<(CallQuorum, bool)> {
    let routing = routing?;
    let call = routing.calls.iter().find(|call| call.call_id == call_id)?;
    let approved = me.is_some_and(|me| call.approved_by.iter().any(|by| by == me));
    let eligible = call.may_approve.unwrap_or(!routing.eligible_by.is_empty());
    Some((call.clone(), eligible && !approved))
}

/// Whether `me` may still approve some call of a routed batch: what the batch bar's Approve
/// all needs (the server refuses an approval from anyone else).
pub fn may_approve_any(routing: &ApprovalRouting, me: Option<&str>) -> bool {
    routing
        .calls
        .iter()
        .any(|call| call_quorum(Some(routing), &call.call_id, me).is_some_and(|(_, may)| may))
}

/// Why the reader may approve nothing of a routed batch, in plain words: "Waits for 2 of sre;
/// you asked for it, so you may reject it or stop it, not approve it." or "You approved;
/// waiting for 1 more of sre"; `None` when they may approve some call.
pub fn cannot_approve_text(routing: &ApprovalRouting, me: Option<&str>) -> Option<String> {
    if may_approve_any(routing, me) {
        return None;
    }
    let by = batch_approvers(routing);
    let mut more = 0;
    let mut approved_any = false;
    for call in &routing.calls {
        more = more.max((call.quorum as usize).saturating_sub(call.approved_by.len()));
        approved_any |= me.is_some_and(|me| call.approved_by.iter().any(|by| by == me));
    }
    Some(if approved_any {
        format!("You approved; waiting for {more} more of {by}")
    } else if me == Some(routing.requested_by.as_str()) {
        format!("Waits for {more} of {by}; you asked for it, so you may reject it or stop it, not approve it.")
    } else {
        format!("Waits for {more} of {by}; you may read it, not approve it.")
    })
}

/// Whom a routed batch still waits for, every call's approvers in one list: "sre", "sre or
/// dave"; someone named by user entry who approved a call is not waited for on it.
fn batch_approvers(routing: &ApprovalRouting) -> String {
    let mut entries: Vec<String> = Vec::new();
    for call in &routing.calls {
        for entry in entries_left(call) {
            if !entries.contains(entry) {
                entries.push(entry.clone());
            }
        }
    }
    approvers_label(&entries)
}

/// What the chat's status line says while a routed batch waits, for the reader `me` whose
/// routing it is: its tools and whom they wait for when the reader may not approve ("write_file
/// waits for approval by sre"); where the quorum stands once they approved every call ("You
/// approved; waiting for 1 more of sre"); else the batch's own words ("write_file waits for
/// your approval").
pub fn routed_status(batch: &PendingBatch, routing: &ApprovalRouting, me: Option<&str>) -> String {
    let by = batch_approvers(routing);
    if routing.eligible_by.is_empty() {
        let names: Vec<&str> = batch
            .requests
            .iter()
            .map(|call| call.name.as_str())
            .collect();
        return match names.as_slice() {
            [one] => format!("{one} waits for approval by {by}"),
            many => format!(
                "{} calls wait for approval by {by}: {}",
                many.len(),
                many.join(", ")
            ),
        };
    }
    let approved_all = me.is_some_and(|me| {
        !routing.calls.is_empty()
            && routing
                .calls
                .iter()
                .all(|call| call.approved_by.iter().any(|by| by == me))
    });
    if !approved_all {
        return batch.announcement();
    }
    let mut more = 0;
    for call in &routing.calls {
        more = more.max((call.quorum as usize).saturating_sub(call.approved_by.len()));
    }
    format!("You approved; waiting for {more} more of {by}")
}

/// What the composer says instead when the requester may not approve a routed batch (a
/// two-person rule, or calls routed to others): a reply that would approve, or that decides
/// nothing, is not sent, and the words say whom the calls wait for and what the requester may
/// do. `None` where the composer's own words stand (and Send sends).
pub fn requester_reply(
    effect: &SendEffect,
    text: &str,
    routing: &ApprovalRouting,
) -> Option<String> {
    let SendEffect::Reply { calls, reply, .. } = effect else {
        return None;
    };
    if !routing.eligible_by.is_empty() {
        return None;
    }
    let by = batch_approvers(routing);
    let approves = Decision::from_text(text).is_some_and(|decision| match decision.kind {
        DecisionKind::ApproveAll => true,
        DecisionKind::DenyAll { .. } => false,
        DecisionKind::Batch { decisions, .. } => decisions
            .values()
            .any(|verdict| *verdict == Verdict::Approve),
    });
    let what = pending_calls(*calls);
    let waits = if *calls == 1 { "waits" } else { "wait" };
    match reply {
        Reply::Decision(_) if approves => Some(format!(
            "You may not approve: {what} {waits} for approval by {by}. Say reject, or explain \
             what to do instead (that rejects {what})."
        )),
        Reply::Unclear => Some(format!(
            "Not a decision yet: {what} {waits} for approval by {by}. Say reject, or write what \
             the agent should do instead (that rejects {what} with your words as the reason)."
        )),
        Reply::Decision(_) | Reply::RejectsWithReason => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(approved_by: &[&str], voided: &[&str]) -> CallQuorum {
        CallQuorum {
            call_id: "call_1".to_owned(),
            approvers: vec!["group:sre".to_owned(), "user:dave".to_owned()],
            requester_may_approve: false,
            quorum: 2,
            approved_by: approved_by.iter().map(|by| (*by).to_owned()).collect(),
            approved_via: Default::default(),
            escalated_to: Vec::new(),
            voided: voided.iter().map(|by| (*by).to_owned()).collect(),
            args_sha256: None,
            requirement: String::new(),
            may_approve: None,
        }
    }

    fn routing(eligible_by: &[&str], approved_by: &[&str]) -> ApprovalRouting {
        ApprovalRouting {
            requested_by: "alice".to_owned(),
            eligible_by: eligible_by.iter().map(|by| (*by).to_owned()).collect(),
            calls: vec![call(approved_by, &[])],
        }
    }

    #[test]
    fn a_card_says_whom_it_waits_for_and_how_far_it_came() {
        assert_eq!(
            waiting_for(&call(&[], &[])).as_deref(),
            Some("Waiting for sre or dave: 0 of 2")
        );
        assert_eq!(
            waiting_for(&call(&["bob"], &[])).as_deref(),
            Some("Approved by bob: 1 of 2; waiting for 1 more of sre or dave")
        );
        let mut alone = call(&[], &[]);
        alone.approvers.clear();
        assert_eq!(waiting_for(&alone), None);
        assert_eq!(voided_text(&call(&["bob"], &[])), None);
        assert_eq!(
            voided_text(&call(&[], &["bob"])).as_deref(),
            Some("The arguments were edited: the approval of bob no longer counts.")
        );
    }

    #[test]
    fn a_card_says_by_which_route_each_approver_approved() {
        let mut named = call(&["dave"], &[]);
        named.approved_via = vec![vec!["user:dave".into()]];
        // Dave, named by the agents file, does not read as one of sre; he is not waited for.
        assert_eq!(
            waiting_for(&named).as_deref(),
            Some("Approved by dave (named approver): 1 of 2; waiting for 1 more of sre")
        );
        let mut both = call(&["bob", "erin"], &[]);
        both.approved_via = vec![
            vec!["group:sre".into()],
            vec!["group:dba".into(), "user:erin".into()],
        ];
        both.quorum = 3;
        assert_eq!(
            waiting_for(&both).as_deref(),
            Some(
                "Approved by bob (in sre), erin (asked by hand-over): 2 of 3; \
                 waiting for 1 more of sre or dave"
            )
        );
        // Erin by group dba alone, which the batch escalated to: asked by escalation; another
        // of dba may give the last approval too.
        both.approved_via[1] = vec!["group:dba".into()];
        both.escalated_to = vec!["group:dba".into()];
        assert_eq!(
            waiting_for(&both).as_deref(),
            Some(
                "Approved by bob (in sre), erin (asked by escalation): 2 of 3; \
                 waiting for 1 more of sre or dave or dba"
            )
        );
        let mut done = call(&["bob", "carol"], &[]);
        // Bob's route unknown (a server that does not say): his name alone.
        done.approved_via = vec![Vec::new(), vec!["requester".into()]];
        assert_eq!(
            waiting_for(&done).as_deref(),
            Some("Approved by bob, carol (the requester): 2 of 2")
        );
    }

    #[test]
    fn the_inbox_says_who_asked_and_why_the_reader_is_asked() {
        assert_eq!(
            asked_text("default/deploy", &routing(&["group:sre"], &[])),
            "default/deploy asks for alice · you are asked as group sre"
        );
        assert_eq!(
            asked_text("default/deploy", &routing(&[], &[])),
            "default/deploy asks for alice · others approve; you may reject or stop it"
        );
    }

    fn pending(names: &[&str]) -> PendingBatch {
        let requests = names
            .iter()
            .enumerate()
            .map(|(index, name)| signoff_protocol::hitl::ActionRequest {
                id: format!("call_{}", index + 1),
                name: (*name).to_owned(),
                args: serde_json::json!({}),
                description: None,
                server: None,
                approval_id: None,
                via: None,
                metadata: Default::default(),
            })
            .collect();
        PendingBatch {
            task_id: "t-1".to_owned(),
            context_id: None,
            dialect: signoff_protocol::hitl::Dialect::Native,
            requests,
            keys: Vec::new(),
            expires_at: None,
        }
    }

    #[test]
    fn the_status_line_says_whom_a_routed_batch_waits_for() {
        let batch = pending(&["write_file"]);
        // The requester under a two-person rule: not "your approval".
        assert_eq!(
            routed_status(&batch, &routing(&[], &[]), Some("alice")),
            "write_file waits for approval by sre or dave"
        );
        assert_eq!(
            routed_status(
                &pending(&["write_file", "delete_file"]),
                &routing(&[], &[]),
                None
            ),
            "2 calls wait for approval by sre or dave: write_file, delete_file"
        );
        // An approver: asked until they approved, then where the quorum stands.
        let voted = routing(&["group:sre"], &["bob"]);
        assert_eq!(
            routed_status(&batch, &voted, Some("carol")),
            "write_file waits for your approval"
        );
        assert_eq!(
            routed_status(&batch, &voted, Some("bob")),
            "You approved; waiting for 1 more of sre or dave"
        );
        // Dave, named by user entry, approved: the requester's line no longer names him.
        let dave_approved = routing(&[], &["dave"]);
        assert_eq!(
            routed_status(&batch, &dave_approved, Some("alice")),
            "write_file waits for approval by sre"
        );
        assert_eq!(
            cannot_approve_text(&dave_approved, Some("alice")).as_deref(),
            Some("Waits for 1 of sre; you asked for it, so you may reject it or stop it, not approve it.")
        );
    }

    #[test]
    fn a_requester_who_may_not_approve_is_offered_reject_only() {
        let effect = |reply: Reply| SendEffect::Reply {
            task_id: "t-1".to_owned(),
            calls: 1,
            question: false,
            reply,
        };
        let requester = routing(&[], &[]);
        let hint = requester_reply(
            &effect(Reply::Decision("approve all".to_owned())),
            "approve",
            &requester,
        );
        assert_eq!(
            hint.as_deref(),
            Some(
                "You may not approve: the pending call waits for approval by sre or dave. Say \
                 reject, or explain what to do instead (that rejects the pending call)."
            )
        );
        // The composer shows it and does not send.
        let refused = SendEffect::Refused(hint.clone().unwrap_or_default());
        assert_eq!(refused.hint(), hint);
        assert!(!refused.can_send());
        let hint = requester_reply(&effect(Reply::Unclear), "ok", &requester).unwrap();
        assert!(hint.starts_with("Not a decision yet: the pending call waits for approval by sre"));
        assert!(!hint.contains("approve or"));
        // Rejecting is theirs to do, in words or with a reason: the composer's own words.
        assert_eq!(
            requester_reply(
                &effect(Reply::Decision("reject all".to_owned())),
                "reject",
                &requester
            ),
            None
        );
        assert_eq!(
            requester_reply(&effect(Reply::RejectsWithReason), "use staging", &requester),
            None
        );
        // An eligible reader keeps the composer's own words.
        assert_eq!(
            requester_reply(&effect(Reply::Unclear), "ok", &routing(&["requester"], &[])),
            None
        );
    }

    #[test]
    fn only_an_eligible_reader_who_has_not_approved_may_approve() {
        let routed = routing(&["group:sre"], &["bob"]);
        let may = |me| call_quorum(Some(&routed), "call_1", me).map(|(_, may)| may);
        assert_eq!(may(Some("carol")), Some(true));
        assert_eq!(may(Some("bob")), Some(false));
        assert_eq!(call_quorum(Some(&routed), "call_2", Some("carol")), None);
        assert_eq!(call_quorum(None, "call_1", Some("carol")), None);
        let requester = routing(&[], &[]);
        assert_eq!(
            call_quorum(Some(&requester), "call_1", Some("alice")).map(|(_, may)| may),
            Some(false)
        );
    }

    #[test]
    fn the_requester_under_a_two_person_rule_is_told_why_she_cannot_approve() {
        let mut call = call(&[], &[]);
        call.may_approve = Some(false);
        let routing = ApprovalRouting {
            requested_by: "alice".to_owned(),
            eligible_by: Vec::new(),
            calls: vec![call.clone()],
        };
        assert!(!may_approve_any(&routing, Some("alice")));
        assert_eq!(
            cannot_approve_text(&routing, Some("alice")).unwrap(),
            "Waits for 2 of sre or dave; you asked for it, so you may reject it or stop it, not \
             approve it."
        );
        // An approver who approved is told where the quorum stands.
        let mut voted = call;
        voted.may_approve = Some(true);
        voted.approved_by = vec!["bob".to_owned()];
        let routing = ApprovalRouting {
            requested_by: "alice".to_owned(),
            eligible_by: vec!["group:sre".to_owned()],
            calls: vec![voted],
        };
        assert!(!may_approve_any(&routing, Some("bob")));
        assert!(may_approve_any(&routing, Some("carol")));
        assert_eq!(
            cannot_approve_text(&routing, Some("bob")).unwrap(),
            "You approved; waiting for 1 more of sre or dave"
        );
    }
}
