//! Batches routed to approvers (docs/rest.md, Approvers), in words: who asked, why the reader
//! is asked, how far each call's quorum has come, and which approvals an edit voided; and
//! whether the reader may still approve a call. Pure, so it is tested natively.

use signoff_protocol::rest::{ApprovalRouting, CallQuorum};

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

/// How far a call's quorum has come: "0 of 2", "1 of 2: approved by bob".
pub fn progress(call: &CallQuorum) -> String {
    match call.approved_by.as_slice() {
        [] => format!("0 of {}", call.quorum),
        by => format!(
            "{} of {}: approved by {}",
            by.len(),
            call.quorum,
            by.join(", ")
        ),
    }
}

/// The line of a card whose call waits for approvers: "Waiting for sre: 1 of 2: approved by
/// bob"; `None` when the requester decides alone.
pub fn waiting_for(call: &CallQuorum) -> Option<String> {
    if call.approvers.is_empty() {
        return None;
    }
    Some(format!(
        "Waiting for {}: {}",
        approvers_label(&call.approvers),
        progress(call)
    ))
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
    Some((call.clone(), !routing.eligible_by.is_empty() && !approved))
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
            voided: voided.iter().map(|by| (*by).to_owned()).collect(),
            args_sha256: None,
            requirement: String::new(),
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
            Some("Waiting for sre or dave: 1 of 2: approved by bob")
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
}
