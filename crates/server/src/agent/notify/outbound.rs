//! Outbound HTTP to URLs a client chose (push-notification receivers): a URL that resolves to
//! a loopback, private, link-local, unique-local, CGNAT, metadata or otherwise non-public
//! address is refused, unless the operator allow-listed it (`--push-allow CIDR,…`); an IPv6
//! address that carries an IPv4 one (mapped, compatible, NAT64, 6to4, Teredo) is judged by it.
//! The check runs when a config is set (a name that does not resolve yet is taken) and again
//! at connect time: the client's resolver resolves, checks and hands the connector only the
//! checked addresses, so a name that resolves elsewhere the second time (DNS rebinding)
//! reaches nothing it should not. No redirects are followed, no proxy from the environment is
//! used, connects and whole requests time out, response bodies are read up to a cap, and
//! errors never carry the URL (its path or query may hold the receiver's secret).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use ipnet::IpNet;

/// The longest URL a client may give.
pub const MAX_URL_BYTES: usize = 2048;
/// How much of a receiver's answer is read; the rest is dropped with the connection.
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// Why an outbound URL or request is refused or failed. The Display is the reason a client
/// reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutboundError {
    #[error("the URL is not valid: {0}")]
    Syntax(String),
    #[error("{host} resolves to {addr}, a {reason} address, which this server does not post to")]
    Blocked {
        host: String,
        addr: IpAddr,
        reason: &'static str,
    },
    #[error("{host} does not resolve: {detail}")]
    Unresolved { host: String, detail: String },
    #[error("the receiver answered HTTP {0}")]
    Status(u16),
    #[error("the receiver answered with a redirect (HTTP {0}), which is not followed")]
    Redirect(u16),
    #[error("the request failed: {0}")]
    Request(String),
}

impl OutboundError {
    /// Whether trying again later may succeed (a refusal or a client error will not).
    pub fn is_transient(&self) -> bool {
        match self {
            OutboundError::Status(code) => *code >= 500 || *code == 429 || *code == 408,
            OutboundError::Request(_) | OutboundError::Unresolved { .. } => true,
            OutboundError::Syntax(_)
            | OutboundError::Blocked { .. }
            | OutboundError::Redirect(_) => false,
        }
    }
}

/// The networks an operator allows despite their kind (`--push-allow`).
#[derive(Debug, Clone, Default)]
pub struct AllowList(Vec<IpNet>);

impl AllowList {
    /// Reads `CIDR` entries (a bare address is its own /32 or /128).
    pub fn parse<'a>(entries: impl IntoIterator<Item = &'a str>) -> Result<AllowList, String> {
        let mut nets = Vec::new();
        for entry in entries.into_iter().map(str::trim).filter(|e| !e.is_empty()) {
            let net = match entry.parse::<IpNet>() {
                Ok(net) => net,
                Err(_) => entry
                    .parse::<IpAddr>()
                    .map(IpNet::from)
                    .map_err(|_| format!("--push-allow {entry:?} is not a CIDR network"))?,
            };
            nets.push(net);
        }
        Ok(AllowList(nets))
    }

    /// Whether the operator allowed no network.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn allows(&self, addr: IpAddr) -> bool {
        let inner = embedded_v4(addr).map(IpAddr::V4);
        self.0
            .iter()
            .any(|net| net.contains(&addr) || inner.is_some_and(|v4| net.contains(&v4)))
    }
}

/// The IPv4 address an IPv6 address carries, where packets to it go: IPv4-mapped
/// (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`), 6to4
/// (`2002:AABB:CCDD::/48`, the relay's address in bits 16 to 48) and Teredo (`2001:0::/32`, the
/// client's address in the last 32 bits, each bit inverted), each judged as the IPv4 address
/// inside.
fn embedded_v4(addr: IpAddr) -> Option<Ipv4Addr> {
    let IpAddr::V6(v6) = addr else { return None };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = v6.segments();
    let v4 = |high: u16, low: u16| Ipv4Addr::from((u32::from(high) << 16) | u32::from(low));
    let compatible = s[..6].iter().all(|&x| x == 0) && (s[6] != 0 || s[7] > 1);
    let nat64 = s[0] == 0x64 && s[1] == 0xff9b && s[2..6].iter().all(|&x| x == 0);
    if compatible || nat64 {
        return Some(v4(s[6], s[7]));
    }
    match (s[0], s[1]) {
        (0x2002, _) => Some(v4(s[1], s[2])),
        (0x2001, 0) => Some(v4(!s[6], !s[7])),
        _ => None,
    }
}

/// What kind of non-public address `addr` is, or `None` for a public unicast one.
pub fn blocked_reason(addr: IpAddr) -> Option<&'static str> {
    if let Some(v4) = embedded_v4(addr) {
        return v4_reason(v4);
    }
    match addr {
        IpAddr::V4(v4) => v4_reason(v4),
        IpAddr::V6(v6) => v6_reason(v6),
    }
}

fn v4_reason(v4: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = v4.octets();
    let reason =
        if v4 == Ipv4Addr::new(169, 254, 169, 254) || v4 == Ipv4Addr::new(100, 100, 100, 200) {
            "cloud metadata"
        } else if v4.is_loopback() {
            "loopback"
        } else if v4.is_private() {
            "private"
        } else if v4.is_link_local() {
            "link-local"
        } else if a == 100 && (64..128).contains(&b) {
            "CGNAT (shared address space)"
        } else if v4.is_unspecified() || a == 0 {
            "unspecified"
        } else if v4.is_multicast() {
            "multicast"
        } else if v4.is_broadcast()
            || a >= 240
            || v4.is_documentation()
            || (a == 198 && (b & 0xfe) == 18)
            || (a == 192 && b == 0 && c == 0)
        {
            "reserved"
        } else {
            return None;
        };
    Some(reason)
}

fn v6_reason(v6: Ipv6Addr) -> Option<&'static str> {
    let first = v6.segments()[0];
    let reason = if v6 == Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254) {
        "cloud metadata"
    } else if v6.is_loopback() {
        "loopback"
    } else if v6.is_unspecified() {
        "unspecified"
    } else if (first & 0xffc0) == 0xfe80 || (first & 0xffc0) == 0xfec0 {
        "link-local"
    } else if (first & 0xfe00) == 0xfc00 {
        "unique-local"
    } else if v6.is_multicast() {
        "multicast"
    } else if first == 0x2001 && v6.segments()[1] == 0x0db8 {
        "reserved"
    } else if (first & 0xe000) != 0x2000 {
        // Only 2000::/3 is global unicast.
        "reserved"
    } else {
        return None;
    };
    Some(reason)
}

/// The refusal of `addr` for `host`, unless it is public or allow-listed.
fn check_addr(host: &str, addr: IpAddr, allow: &AllowList) -> Result<(), OutboundError> {
    match blocked_reason(addr) {
        Some(reason) if !allow.allows(addr) => Err(OutboundError::Blocked {
            host: host.to_owned(),
            addr,
            reason,
        }),
        _ => Ok(()),
    }
}

/// A URL a client gave, read and checked for its form: http or https, a host, no user
/// information, not too long. An IP literal host is checked here too.
pub fn parse_url(raw: &str, allow: &AllowList) -> Result<reqwest::Url, OutboundError> {
    if raw.len() > MAX_URL_BYTES {
        return Err(OutboundError::Syntax(format!(
            "it is longer than {MAX_URL_BYTES} bytes"
        )));
    }
    let url = reqwest::Url::parse(raw).map_err(|err| OutboundError::Syntax(err.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(OutboundError::Syntax(format!(
            "scheme {:?} is not http or https",
            url.scheme()
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(OutboundError::Syntax(
            "it holds user information; give credentials in authentication".to_owned(),
        ));
    }
    match url.host() {
        None => return Err(OutboundError::Syntax("it has no host".to_owned())),
        Some(url::Host::Ipv4(v4)) => check_addr(&v4.to_string(), IpAddr::V4(v4), allow)?,
        Some(url::Host::Ipv6(v6)) => check_addr(&format!("[{v6}]"), IpAddr::V6(v6), allow)?,
        Some(url::Host::Domain(_)) => {}
    }
    Ok(url)
}

/// Resolves `host` and checks every address: one refused address refuses the name (a name
/// that resolves to a public and a private address could be steered to the private one).
pub async fn resolve_checked(
    host: &str,
    port: u16,
    allow: &AllowList,
) -> Result<Vec<SocketAddr>, OutboundError> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|err| OutboundError::Unresolved {
            host: host.to_owned(),
            detail: err.to_string(),
        })?
        .collect();
    if addrs.is_empty() {
        return Err(OutboundError::Unresolved {
            host: host.to_owned(),
            detail: "no addresses".to_owned(),
        });
    }
    for addr in &addrs {
        check_addr(host, addr.ip(), allow)?;
    }
    Ok(addrs)
}

/// Checks a client's URL as it is set: its form, an IP literal's address, and what a name
/// resolves to now when it resolves. A name that does not resolve yet is taken (a receiver's
/// name may be published later, or this server be offline): the connect-time check refuses it
/// then if it resolves to a refused address, as it does a name rebound since.
pub async fn check_url(raw: &str, allow: &AllowList) -> Result<reqwest::Url, OutboundError> {
    let url = parse_url(raw, allow)?;
    if let Some(url::Host::Domain(host)) = url.host() {
        let port = url.port_or_known_default().unwrap_or(80);
        match resolve_checked(host, port, allow).await {
            Ok(_) | Err(OutboundError::Unresolved { .. }) => {}
            Err(err) => return Err(err),
        }
    }
    Ok(url)
}

/// The resolver of the outbound client: resolves, checks, and gives the connector only the
/// addresses it checked.
struct CheckedResolver {
    allow: Arc<AllowList>,
}

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow = self.allow.clone();
        Box::pin(async move {
            let addrs = resolve_checked(name.as_str(), 0, &allow).await?;
            let addrs: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// The HTTP client for client-chosen URLs.
#[derive(Clone)]
pub struct Outbound {
    client: reqwest::Client,
    allow: Arc<AllowList>,
}

impl Outbound {
    /// The client, whose connects take at most `connect_timeout` and whole requests (connect,
    /// send, answer) at most `timeout`: the outbox's delivery schedule, whose lease outlasts them.
    pub fn new(
        allow: AllowList,
        connect_timeout: Duration,
        timeout: Duration,
    ) -> Result<Outbound, OutboundError> {
        let allow = Arc::new(allow);
        let client = reqwest::Client::builder()
            .dns_resolver(Arc::new(CheckedResolver {
                allow: allow.clone(),
            }))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .connect_timeout(connect_timeout)
            .timeout(timeout)
            .build()
            .map_err(|err| OutboundError::Request(err.to_string()))?;
        Ok(Outbound { client, allow })
    }

    pub fn allow(&self) -> &AllowList {
        &self.allow
    }

    /// POSTs `body` (JSON) to `raw` with `headers`; Ok for a 2xx answer, whose body is read up
    /// to [`MAX_RESPONSE_BYTES`] and dropped.
    pub async fn post_json(
        &self,
        raw: &str,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    ) -> Result<u16, OutboundError> {
        self.post(raw, headers, body, "application/json").await
    }

    /// [`Outbound::post_json`] of a body of `content_type`.
    pub async fn post(
        &self,
        raw: &str,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
        content_type: &str,
    ) -> Result<u16, OutboundError> {
        // An IP literal never reaches the resolver: it is checked here, each time.
        let url = parse_url(raw, &self.allow)?;
        let mut request = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, content_type)
            .body(body);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let mut response = request.send().await.map_err(request_error)?;
        let status = response.status().as_u16();
        let mut read = 0;
        while read < MAX_RESPONSE_BYTES {
            match response.chunk().await {
                Ok(Some(chunk)) => read += chunk.len(),
                Ok(None) | Err(_) => break,
            }
        }
        match status {
            200..=299 => Ok(status),
            300..=399 => Err(OutboundError::Redirect(status)),
            _ => Err(OutboundError::Status(status)),
        }
    }
}

/// A request error, with the refusal of the resolver when that was the cause; else what went
/// wrong and its deepest cause, never the URL (a client's URL may carry a secret in its path or
/// query, and this text is logged and kept with the notification).
fn request_error(err: reqwest::Error) -> OutboundError {
    let err = err.without_url();
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&err);
    let mut deepest = None;
    while let Some(cause) = source {
        if let Some(refused) = cause.downcast_ref::<OutboundError>() {
            return refused.clone();
        }
        deepest = Some(cause);
        source = cause.source();
    }
    match deepest {
        Some(cause) if !std::ptr::addr_eq(cause, &err) => {
            OutboundError::Request(format!("{err}: {cause}"))
        }
        Some(_) | None => OutboundError::Request(err.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(addr: &str) -> Option<&'static str> {
        blocked_reason(addr.parse().unwrap())
    }

    #[test]
    fn non_public_addresses_are_named() {
        for (addr, expected) in [
            ("127.0.0.1", "loopback"),
            ("127.3.4.5", "loopback"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("192.168.1.1", "private"),
            ("169.254.169.254", "cloud metadata"),
            ("169.254.1.1", "link-local"),
            ("100.64.0.1", "CGNAT (shared address space)"),
            ("100.127.255.255", "CGNAT (shared address space)"),
            ("0.0.0.0", "unspecified"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "reserved"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("fe80::1", "link-local"),
            ("fd12:3456::1", "unique-local"),
            ("fc00::1", "unique-local"),
            ("fd00:ec2::254", "cloud metadata"),
            ("ff02::1", "multicast"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:10.0.0.1", "private"),
            ("::ffff:169.254.169.254", "cloud metadata"),
            ("64:ff9b::a9fe:a9fe", "cloud metadata"),
            ("::127.0.0.1", "loopback"),
            ("2001:db8::1", "reserved"),
            ("2002:7f00:1::", "loopback"),
            ("2002:a9fe:a9fe::1", "cloud metadata"),
            ("2002:a00:1:5::9", "private"),
            ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"),
            ("2001:0:1:2:3:4:5601:5601", "cloud metadata"),
            ("2001::f5ff:fffe", "private"),
            ("::ffff:a9fe:a9fe", "cloud metadata"),
            ("::a00:1", "private"),
            ("64:ff9b::7f00:1", "loopback"),
        ] {
            assert_eq!(reason(addr), Some(expected), "{addr}");
        }
        for public in [
            "93.184.216.34",
            "8.8.8.8",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "2002:808:808::1",
            "2001:0:4136:e378:8000:63bf:f7f7:f7f7",
        ] {
            assert_eq!(reason(public), None, "{public}");
        }
    }

    #[test]
    fn the_allow_list_lets_chosen_networks_through_mapped_forms_too() {
        let allow = AllowList::parse(["127.0.0.1/32", "10.0.0.0/8"]).unwrap();
        assert!(parse_url("http://127.0.0.1:9/x", &allow).is_ok());
        assert!(parse_url("http://[::ffff:127.0.0.1]:9/x", &allow).is_ok());
        assert!(parse_url("http://10.9.9.9/x", &allow).is_ok());
        let err = parse_url("http://127.0.0.2/x", &allow).unwrap_err();
        assert_eq!(
            err.to_string(),
            "127.0.0.2 resolves to 127.0.0.2, a loopback address, which this server does not post to"
        );
        assert!(AllowList::parse(["nope"]).is_err());
        assert!(AllowList::parse(["::1"])
            .unwrap()
            .allows("::1".parse().unwrap()));
    }

    #[test]
    fn urls_are_checked_for_their_form() {
        let none = AllowList::default();
        for (raw, expected) in [
            ("ftp://example.com/x", "the URL is not valid: scheme \"ftp\" is not http or https"),
            ("not a url", "the URL is not valid: relative URL without a base"),
            (
                "https://user:pw@example.com/",
                "the URL is not valid: it holds user information; give credentials in authentication",
            ),
            (
                "http://[::1]:8080/",
                "[::1] resolves to ::1, a loopback address, which this server does not post to",
            ),
            (
                "http://169.254.169.254/latest",
                "169.254.169.254 resolves to 169.254.169.254, a cloud metadata address, which this server does not post to",
            ),
        ] {
            assert_eq!(parse_url(raw, &none).unwrap_err().to_string(), expected, "{raw}");
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_BYTES));
        assert!(matches!(
            parse_url(&long, &none),
            Err(OutboundError::Syntax(_))
        ));
        assert!(parse_url("https://example.com/hook", &none).is_ok());
    }

    #[tokio::test]
    async fn a_name_is_resolved_and_each_address_checked() {
        let none = AllowList::default();
        let err = check_url("http://localhost:9/x", &none).await.unwrap_err();
        assert!(
            matches!(
                err,
                OutboundError::Blocked {
                    reason: "loopback",
                    ..
                }
            ),
            "{err}"
        );
        let allow = AllowList::parse(["127.0.0.1/32", "::1/128"]).unwrap();
        assert!(check_url("http://localhost:9/x", &allow).await.is_ok());
    }

    #[tokio::test]
    async fn a_failed_request_says_why_without_the_url() {
        // A port nobody listens on: the connection is refused.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let second = Duration::from_secs(1);
        let allow = AllowList::parse(["127.0.0.1/32"]).unwrap();
        let outbound = Outbound::new(allow, second, second).unwrap();
        let url = format!("http://127.0.0.1:{port}/hook/path-secret?key=query-secret");
        let err = outbound
            .post_json(&url, Vec::new(), b"{}".to_vec())
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, OutboundError::Request(_)), "{text}");
        assert!(text.contains("refused"), "{text}");
        for secret in ["path-secret", "query-secret", "127.0.0.1", "/hook"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
    }

    #[tokio::test]
    async fn the_client_refuses_at_connect_time_what_resolves_to_a_refused_address() {
        // Nothing listens there, and nothing must be tried: the resolver refuses first.
        let second = Duration::from_secs(1);
        let outbound = Outbound::new(AllowList::default(), second, second).unwrap();
        let err = outbound
            .post_json("http://localhost:9/x", Vec::new(), b"{}".to_vec())
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                OutboundError::Blocked {
                    reason: "loopback",
                    ..
                }
            ),
            "{err}"
        );
        let err = outbound
            .post_json("http://10.0.0.1:9/x", Vec::new(), b"{}".to_vec())
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                OutboundError::Blocked {
                    reason: "private",
                    ..
                }
            ),
            "{err}"
        );
    }
}
