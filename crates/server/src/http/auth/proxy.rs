//! `--auth proxy`: an authenticating proxy in front (oauth2-proxy, Pomerium, an ingress with
//! auth) signs people in and names them in request headers. The headers are believed only on
//! connections from `--trusted-proxies`; from any other address they are ignored and the request
//! has no caller, so nobody who reaches the server around the proxy can name themselves.

use std::net::{IpAddr, SocketAddr};

use axum::extract::ConnectInfo;
use axum::http::request::Parts;
use axum::http::HeaderName;
use ipnet::IpNet;

use super::{Identity, Refusal};

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
        let header = |name: &HeaderName| {
            parts
                .headers
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::trim)
                .filter(|value| !value.is_empty())
        };
        let user =
            header(&self.user_header).ok_or(Refusal::Unauthenticated("the proxy named no user"))?;
        let mut identity = Identity::subject(user);
        identity.email = header(&self.email_header).map(str::to_owned);
        let groups = header(&self.groups_header).unwrap_or("");
        Ok(identity.with_groups(groups.split(',').map(str::to_owned).collect::<Vec<_>>()))
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        // An IPv4 client of a dual-stack socket shows as `::ffff:a.b.c.d`.
        let ip = ip.to_canonical();
        self.trusted.iter().any(|network| network.contains(&ip))
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

    #[test]
    fn bad_flags_are_refused() {
        let header = DEFAULT_USER_HEADER;
        assert!(Proxy::new(&[], header, header, header).is_err());
        let err = Proxy::new(&["10.0.0.0/33".into()], header, header, header).unwrap_err();
        assert!(err.contains("10.0.0.0/33"), "{err}");
        assert!(Proxy::new(&["10.0.0.1".into()], "bad header", header, header).is_err());
    }
}
