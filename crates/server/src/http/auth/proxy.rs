//! `--auth proxy`: an authenticating proxy in front (oauth2-proxy, Pomerium, an ingress with
//! auth) signs people in and names them in request headers. The headers are believed only on
//! connections from `--trusted-proxies`; from any other address they are ignored and the request
//! has no caller, so nobody who reaches the server around the proxy can name themselves.
//!
//! The values are taken byte for byte (UTF-8), never trimmed: a padded value, a control
//! character, or a header sent twice is refused with 400 rather than read as someone. The email
//! header is believed as a verified address (the operator's proxy signed the person in), so
//! `user:EMAIL` approvers match it. Since the proxy's own cookie rides along with requests
//! other sites make, a request that changes something must come from our own pages, as in
//! `--auth oidc`: a browser's `Sec-Fetch-Site` must be `same-origin` (else its `Origin` must be
//! the `Host` asked for); a program sends neither and is let through.

use std::net::{IpAddr, SocketAddr};

use axum::extract::ConnectInfo;
use axum::http::request::Parts;
use axum::http::{header, HeaderName};
use ipnet::IpNet;

use super::{changes_state, is_clean, Identity, Refusal};

/// The proxy's headers and the addresses it connects from.
#[derive(Debug, Clone)]
pub struct Proxy {
    pub trusted: Vec<IpNet>,
    pub user_header: HeaderName,
    pub email_header: HeaderName,
    pub groups_header: HeaderName,
}

/// oauth2-proxy's names for what it sends (`--set-xauthrequest`).
pub const DEFAULT_USER_HEADER: &str = "x-auth-request-user";
pub const DEFAULT_EMAIL_HEADER: &str = "x-auth-request-email";
pub const DEFAULT_GROUPS_HEADER: &str = "x-auth-request-groups";

impl Proxy {
    /// A proxy from its flags: the trusted networks (`10.0.0.0/8`, or one address) and the
    /// header names.
    pub fn new(
        trusted: &[String],
        user_header: &str,
        email_header: &str,
        groups_header: &str,
    ) -> Result<Proxy, String> {
        let trusted = trusted
            .iter()
            .map(|cidr| parse_network(cidr.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        if trusted.is_empty() {
            return Err(
                "--auth proxy needs --trusted-proxies: the addresses the proxy connects from"
                    .to_owned(),
            );
        }
        let header = |flag: &str, name: &str| {
            HeaderName::try_from(name.trim())
                .map_err(|_| format!("{flag}: {name:?} is not a header name"))
        };
        Ok(Proxy {
            trusted,
            user_header: header("--proxy-user-header", user_header)?,
            email_header: header("--proxy-email-header", email_header)?,
            groups_header: header("--proxy-groups-header", groups_header)?,
        })
    }

    /// The user the proxy names, if the request comes from a trusted address.
    pub fn identify(&self, parts: &Parts) -> Result<Identity, Refusal> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(peer)| peer.ip());
        if !peer.is_some_and(|ip| self.trusts(ip)) {
            return Err(Refusal::Unauthenticated("not from a trusted proxy"));
        }
        let user = one_header(parts, &self.user_header)?
            .ok_or(Refusal::Unauthenticated("the proxy named no user"))?;
        let mut identity = Identity::subject(clean(&self.user_header, user)?);
        if let Some(email) = one_header(parts, &self.email_header)? {
            identity.email = Some(clean(&self.email_header, email)?.to_owned());
        }
        let mut groups = Vec::new();
        if let Some(listed) = one_header(parts, &self.groups_header)? {
            for group in listed.split(',') {
                groups.push(clean(&self.groups_header, group)?.to_owned());
            }
        }
        if changes_state(&parts.method) && !browser_same_origin(parts) {
            return Err(Refusal::CrossSite);
        }
        Ok(identity.with_groups(groups))
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        // An IPv4 client of a dual-stack socket shows as `::ffff:a.b.c.d`.
        let ip = ip.to_canonical();
        self.trusted.iter().any(|network| network.contains(&ip))
    }
}

/// The one value of header `name` as UTF-8 (`None`: absent or empty); sent twice, or not
/// UTF-8, it is refused: the proxy's word must be one word.
fn one_header<'a>(parts: &'a Parts, name: &HeaderName) -> Result<Option<&'a str>, Refusal> {
    let mut values = parts.headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(Refusal::BadIdentity(format!(
            "the proxy sent {name} more than once: it must name one identity"
        )));
    }
    let text = std::str::from_utf8(value.as_bytes())
        .map_err(|_| Refusal::BadIdentity(format!("the proxy's {name} is not UTF-8")))?;
    Ok((!text.is_empty()).then_some(text))
}

/// `value` of header `name`, if it is taken as given ([`is_clean`]).
fn clean<'a>(name: &HeaderName, value: &'a str) -> Result<&'a str, Refusal> {
    if is_clean(value) {
        return Ok(value);
    }
    Err(Refusal::BadIdentity(format!(
        "the proxy's {name} holds {value:?}: a value with spaces around it, an empty one or a \
         control character names nobody"
    )))
}

/// Whether a request comes from one of our own pages, or from a program: a browser says where
/// a request comes from in `Sec-Fetch-Site` (every current one) or at least `Origin` (which
/// must then be the host the request is for); a program sends neither.
fn browser_same_origin(parts: &Parts) -> bool {
    let text = |name: &str| {
        parts
            .headers
            .get(name)
            .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
    };
    match (text("sec-fetch-site"), text(header::ORIGIN.as_str())) {
        (Some(site), _) => site == "same-origin",
        (None, Some(origin)) => {
            let host = text(header::HOST.as_str()).unwrap_or_default();
            let origin_host = origin
                .strip_prefix("https://")
                .or_else(|| origin.strip_prefix("http://"));
            !host.is_empty()
                && origin_host.is_some_and(|origin_host| origin_host.eq_ignore_ascii_case(&host))
        }
        (None, None) => true,
    }
}

/// `10.0.0.0/8`, `fd00::/8`, or a bare address (a network of one).
fn parse_network(text: &str) -> Result<IpNet, String> {
    text.parse::<IpNet>()
        .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
        .map_err(|_| format!("--trusted-proxies: {text:?} is not an address or CIDR network"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Request;

    fn proxy() -> Proxy {
        Proxy::new(
            &["10.0.0.0/8".into(), "127.0.0.1".into()],
            DEFAULT_USER_HEADER,
            DEFAULT_EMAIL_HEADER,
            DEFAULT_GROUPS_HEADER,
        )
        .unwrap()
    }

    fn parts(peer: &str, headers: &[(&str, &str)]) -> Parts {
        let mut request = Request::builder();
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let (mut parts, ()) = request.body(()).unwrap().into_parts();
        parts
            .extensions
            .insert(ConnectInfo(peer.parse::<SocketAddr>().unwrap()));
        parts
    }

    const ALICE: &[(&str, &str)] = &[
        ("x-auth-request-user", "alice"),
        ("x-auth-request-email", "alice@example.com"),
        ("x-auth-request-groups", "sre,oncall"),
    ];

    #[test]
    fn a_trusted_proxy_names_the_user_email_and_groups() {
        for peer in ["10.1.2.3:5000", "127.0.0.1:5000", "[::ffff:10.0.0.9]:80"] {
            let identity = proxy().identify(&parts(peer, ALICE)).unwrap();
            assert_eq!(identity.subject, "alice");
            assert_eq!(identity.email.as_deref(), Some("alice@example.com"));
            assert_eq!(identity.groups, ["oncall", "sre"]);
        }
    }

    #[test]
    fn headers_from_anywhere_else_are_ignored() {
        for peer in ["11.0.0.1:5000", "127.0.0.2:5000", "[::1]:80"] {
            assert!(proxy().identify(&parts(peer, ALICE)).is_err(), "{peer}");
        }
        let (mut without_peer, ()) = Request::new(()).into_parts();
        without_peer
            .headers
            .insert("x-auth-request-user", "alice".parse().unwrap());
        assert!(proxy().identify(&without_peer).is_err());
        assert!(proxy().identify(&parts("10.0.0.1:1", &[])).is_err());
    }

    fn refused(headers: &[(&str, &str)]) -> String {
        match proxy().identify(&parts("10.0.0.1:1", headers)) {
            Err(Refusal::BadIdentity(why)) => why,
            other => panic!("{headers:?}: {other:?}"),
        }
    }

    #[test]
    fn values_are_taken_byte_for_byte_and_padded_ones_refused() {
        let user = |value: &'static str| [("x-auth-request-user", value)];
        let identity = proxy()
            .identify(&parts("10.0.0.1:1", &user("Zoë")))
            .unwrap();
        assert_eq!(identity.subject, "Zoë");
        for bad in ["sre\u{a0}", "\u{2003}alice", "al\tice\t"] {
            let why = refused(&user(bad));
            assert!(why.contains("x-auth-request-user"), "{why}");
        }
        let why = refused(&[
            ("x-auth-request-user", "alice"),
            ("x-auth-request-groups", "sre, oncall"),
        ]);
        assert!(why.contains("\" oncall\""), "{why}");
        refused(&[
            ("x-auth-request-user", "alice"),
            ("x-auth-request-groups", "sre,,oncall"),
        ]);
        refused(&[
            ("x-auth-request-user", "alice"),
            ("x-auth-request-email", "a@example.com\u{feff}"),
        ]);
    }

    #[test]
    fn a_header_sent_twice_is_refused() {
        for repeated in [
            DEFAULT_USER_HEADER,
            DEFAULT_EMAIL_HEADER,
            DEFAULT_GROUPS_HEADER,
        ] {
            let mut headers = ALICE.to_vec();
            headers.push((repeated, "mallory"));
            let why = refused(&headers);
            assert!(
                why.contains(repeated) && why.contains("more than once"),
                "{why}"
            );
        }
    }

    #[test]
    fn a_cross_site_change_is_refused_and_a_program_passes() {
        let post = |headers: &[(&str, &str)]| {
            let mut parts = parts("10.0.0.1:1", &[ALICE, headers].concat());
            parts.method = axum::http::Method::POST;
            proxy().identify(&parts)
        };
        let host = ("host", "signoff.example.com");
        for cross in [
            &[("sec-fetch-site", "cross-site")][..],
            &[("sec-fetch-site", "same-site")][..],
            &[("sec-fetch-site", "none")][..],
            &[host, ("origin", "https://evil.example")][..],
            &[host, ("origin", "null")][..],
        ] {
            assert_eq!(post(cross), Err(Refusal::CrossSite), "{cross:?}");
        }
        for own in [
            &[("sec-fetch-site", "same-origin")][..],
            &[host, ("origin", "https://signoff.example.com")][..],
            &[][..],
        ] {
            assert!(post(own).is_ok(), "{own:?}");
        }
    }

    #[test]
    fn bad_flags_are_refused() {
        let header = DEFAULT_USER_HEADER;
        assert!(Proxy::new(&[], header, header, header).is_err());
        let err = Proxy::new(&["10.0.0.0/33".into()], header, header, header).unwrap_err();
        assert!(err.contains("10.0.0.0/33"), "{err}");
        assert!(Proxy::new(&["10.0.0.1".into()], "bad header", header, header).is_err());
    }
}
