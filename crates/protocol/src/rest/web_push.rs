//! Web Push (docs/rest.md, Web Push): the server's VAPID key and a person's enrolled devices.
//! Like share links, their keys are snake_case; a subscription is the browser's
//! `PushSubscription.toJSON()` as it gives it (`endpoint`, `expirationTime`, `keys`).

use serde::{Deserialize, Serialize};

/// `GET /api/push/vapid`: the key a browser subscribes with (`applicationServerKey`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VapidKey {
    /// The uncompressed P-256 point (65 bytes), base64url without padding.
    pub public_key: String,
}

/// A browser's push subscription, as `PushSubscription.toJSON()` gives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrowserSubscription {
    pub endpoint: String,
    /// Ignored: the push service says when it ends (a 404 or 410).
    #[serde(
        default,
        rename = "expirationTime",
        skip_serializing_if = "Option::is_none"
    )]
    pub expiration_time: Option<serde_json::Value>,
    pub keys: SubscriptionKeys,
}

/// The subscription's keys, base64url: the browser's P-256 key and its 16-byte secret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubscriptionKeys {
    pub p256dh: String,
    pub auth: String,
}

/// `POST /api/push/subscriptions`: enrols this device under a name its person chose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewDevice {
    pub device: String,
    pub subscription: BrowserSubscription,
}

/// One enrolled device, without its keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Device {
    pub id: String,
    pub device: String,
    /// The push service's origin (`https://fcm.googleapis.com`), never its full URL.
    pub service: String,
    pub created_at: String,
}

/// `GET /api/push/subscriptions`: the caller's devices, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceList {
    pub devices: Vec<Device>,
}
