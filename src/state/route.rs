//! The app's routes, as pure functions from and to URL paths.
//!
//! `/` opens the first agent, `/agents/{ns}/{agent}/chat` starts a chat,
//! `/agents/{ns}/{agent}/chat/{session}` reopens one, and `/approvals` lists every batch waiting
//! for the person.

/// Where the person is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Home,
    Chat {
        namespace: String,
        agent: String,
        /// `None` for a new chat.
        session: Option<String>,
    },
    /// The Approvals page: every batch that waits for the person.
    Approvals,
    NotFound,
}

fn decode(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = std::str::from_utf8(bytes.get(index + 1..index + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).ok().filter(|text| !text.is_empty())
}

/// Percent-encodes one path segment.
pub fn encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

impl Route {
    pub fn parse(path: &str) -> Route {
        let path = path.split(['?', '#']).next().unwrap_or("");
        let segments: Vec<&str> = path
            .split('/')
            .filter(|segment| !segment.is_empty())
            .collect();
        match segments.as_slice() {
            [] => Route::Home,
            ["approvals"] => Route::Approvals,
            ["agents", namespace, agent, "chat", rest @ ..] if rest.len() <= 1 => {
                let (Some(namespace), Some(agent)) = (decode(namespace), decode(agent)) else {
                    return Route::NotFound;
                };
                let session = match rest.first() {
                    Some(session) => match decode(session) {
                        Some(session) => Some(session),
                        None => return Route::NotFound,
                    },
                    None => None,
                };
                Route::Chat {
                    namespace,
                    agent,
                    session,
                }
            }
            _ => Route::NotFound,
        }
    }

    pub fn path(&self) -> String {
        match self {
            Route::Home | Route::NotFound => "/".to_owned(),
            Route::Approvals => "/approvals".to_owned(),
            Route::Chat {
                namespace,
                agent,
                session,
            } => {
                let base = format!("/agents/{}/{}/chat", encode(namespace), encode(agent));
                match session {
                    Some(session) => format!("{base}/{}", encode(session)),
                    None => base,
                }
            }
        }
    }

    pub fn chat(namespace: &str, agent: &str, session: Option<&str>) -> Route {
        Route::Chat {
            namespace: namespace.to_owned(),
            agent: agent.to_owned(),
            session: session.map(str::to_owned),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_round_trip() {
        for (path, route) in [
            ("/", Route::Home),
            (
                "/agents/default/demo/chat",
                Route::chat("default", "demo", None),
            ),
            (
                "/agents/default/demo/chat/",
                Route::chat("default", "demo", None),
            ),
            (
                "/agents/ns/my%20agent/chat/s-1?x=1",
                Route::chat("ns", "my agent", Some("s-1")),
            ),
            ("/approvals", Route::Approvals),
            ("/approvals/", Route::Approvals),
            ("/agents/default/demo", Route::NotFound),
            ("/agents/default/demo/chat/a/b", Route::NotFound),
        ] {
            assert_eq!(Route::parse(path), route, "{path}");
        }
        let route = Route::chat("ns", "my agent", Some("s/1"));
        assert_eq!(route.path(), "/agents/ns/my%20agent/chat/s%2F1");
        assert_eq!(Route::parse(&route.path()), route);
    }
}
