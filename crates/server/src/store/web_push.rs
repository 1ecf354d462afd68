//! Web Push subscriptions (`push_subscriptions`): each device a person enrolled, with the push
//! service's endpoint and the keys its pushes are encrypted to. Each backend's `web_push`
//! writes and reads it.

/// One enrolled device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushSubscriptionRow {
    /// `wps_` and a UUID.
    pub id: String,
    pub user_id: String,
    /// The name its person gave it.
    pub device: String,
    /// The push service's URL for it (a capability: never shown back).
    pub endpoint: String,
    /// The browser's P-256 key (65 bytes, uncompressed), base64url.
    pub p256dh: String,
    /// Its 16-byte authentication secret, base64url.
    pub auth: String,
    /// RFC 3339.
    pub created_at: String,
}

pub(super) const PUSH_SUBSCRIPTION_SELECT: &str =
    "SELECT id, user_id, device, endpoint, p256dh, auth, created_at FROM push_subscriptions";
