//! A sign-in token given in the address (`/#token=…`): taken at once when the browser has none,
//! and put in place of another account's token only when the person says so, having seen whose
//! both tokens are. Otherwise a link made by anyone could sign a person in as the link's maker,
//! and their next chats and decisions would land in that account.

/// Whose a token is, as the server answers `GET /api/me`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    /// The user it signs in as.
    User(String),
    /// The server knows no such token (`401`).
    Unknown,
}

/// What to do at once with a token found in the address, before asking the server anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arrival {
    /// The browser has no token: a first sign-in, taken as it comes.
    Adopt,
    /// Nothing to change: the same token, or an empty one.
    Ignore,
    /// Another token than the saved one: ask the server whose both are, then [`decide`].
    Check,
}

/// What a token in the address does, given the saved one.
pub fn on_arrival(saved: Option<&str>, offered: &str) -> Arrival {
    let offered = offered.trim();
    if offered.is_empty() {
        return Arrival::Ignore;
    }
    match saved.map(str::trim).filter(|saved| !saved.is_empty()) {
        None => Arrival::Adopt,
        Some(saved) if saved == offered => Arrival::Ignore,
        Some(_) => Arrival::Check,
    }
}

/// What to do once the server said whose the saved and the offered tokens are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The link's token is the same account's: taking it switches nothing.
    Adopt,
    /// The link signs in to no account: the saved token stays; the notice says so.
    Keep { notice: String },
    /// The link signs in as someone else: the person chooses.
    Confirm(Switch),
}

/// A switch of accounts the person is asked to confirm.
#[derive(Clone, PartialEq, Eq)]
pub struct Switch {
    /// The link's token, saved only if the person confirms.
    pub token: String,
    /// Who the link signs in as.
    pub to: String,
    /// Who the person is signed in as now; `None`: their saved token is not known to the server.
    pub from: Option<String>,
}

// By hand: a token is a password, and a Debug print must not show it.
impl std::fmt::Debug for Switch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Switch")
            .field("to", &self.to)
            .field("from", &self.from)
            .finish_non_exhaustive()
    }
}

impl Switch {
    /// The confirm's first line: where the link leads.
    pub fn offer(&self) -> String {
        format!("This link signs you in as {}.", self.to)
    }

    /// The confirm's second line: where the person is now.
    pub fn current(&self) -> String {
        match &self.from {
            Some(from) => format!("You are signed in as {from}."),
            None => "The sign-in saved in this browser is not known to this server.".to_owned(),
        }
    }

    pub fn switch_label(&self) -> String {
        format!("Switch to {}", self.to)
    }

    pub fn stay_label(&self) -> String {
        match &self.from {
            Some(from) => format!("Stay as {from}"),
            None => "Keep the saved sign-in".to_owned(),
        }
    }
}

/// Whether the link's token (`offered`, held by `offered_holder`) may replace the saved one
/// (held by `saved_holder`): only silently when it is the same account.
pub fn decide(saved_holder: Holder, offered_holder: Holder, offered: String) -> Outcome {
    match (saved_holder, offered_holder) {
        (_, Holder::Unknown) => Outcome::Keep {
            notice: "The sign-in in this link is not known to this server; nothing changed."
                .to_owned(),
        },
        (Holder::User(from), Holder::User(to)) if from == to => Outcome::Adopt,
        (Holder::User(from), Holder::User(to)) => Outcome::Confirm(Switch {
            token: offered,
            to,
            from: Some(from),
        }),
        (Holder::Unknown, Holder::User(to)) => Outcome::Confirm(Switch {
            token: offered,
            to,
            from: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str) -> Holder {
        Holder::User(name.to_owned())
    }

    #[test]
    fn only_a_browser_without_a_token_takes_the_links_at_once() {
        assert_eq!(on_arrival(None, "bob-token"), Arrival::Adopt);
        assert_eq!(on_arrival(Some("  "), "bob-token"), Arrival::Adopt);
        assert_eq!(on_arrival(Some("alice-token"), "bob-token"), Arrival::Check);
        assert_eq!(
            on_arrival(Some("alice-token"), "alice-token"),
            Arrival::Ignore
        );
        assert_eq!(on_arrival(Some("alice-token"), ""), Arrival::Ignore);
        assert_eq!(on_arrival(None, " "), Arrival::Ignore);
    }

    #[test]
    fn another_account_is_asked_with_both_names() {
        let outcome = decide(user("alice"), user("mallory"), "m-token".to_owned());
        let Outcome::Confirm(switch) = outcome else {
            panic!("{outcome:?}");
        };
        assert_eq!(switch.token, "m-token");
        assert_eq!(switch.offer(), "This link signs you in as mallory.");
        assert_eq!(switch.current(), "You are signed in as alice.");
        assert_eq!(switch.switch_label(), "Switch to mallory");
        assert_eq!(switch.stay_label(), "Stay as alice");
        assert!(!format!("{switch:?}").contains("m-token"));
    }

    #[test]
    fn a_saved_token_the_server_forgot_is_still_asked_about() {
        let outcome = decide(Holder::Unknown, user("bob"), "b".to_owned());
        let Outcome::Confirm(switch) = outcome else {
            panic!("{outcome:?}");
        };
        assert_eq!(switch.from, None);
        assert_eq!(switch.stay_label(), "Keep the saved sign-in");
        assert!(
            switch.current().contains("not known"),
            "{}",
            switch.current()
        );
    }

    #[test]
    fn the_same_account_switches_nothing_and_an_unknown_link_changes_nothing() {
        assert_eq!(
            decide(user("alice"), user("alice"), "a2".to_owned()),
            Outcome::Adopt
        );
        for saved in [user("alice"), Holder::Unknown] {
            assert!(matches!(
                decide(saved, Holder::Unknown, "x".to_owned()),
                Outcome::Keep { .. }
            ));
        }
    }
}
