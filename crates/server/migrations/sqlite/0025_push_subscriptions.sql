-- Web Push (crates/server/src/store/web_push.rs): each device a person enrolled, by the push
-- service's endpoint the browser gave and its keys, so a waiting batch reaches it and its
-- decision closes the notification there. A push service's 404 or 410 deletes the row.
CREATE TABLE push_subscriptions (
    id          TEXT PRIMARY KEY,              -- wps_ and a UUID
    user_id     TEXT NOT NULL,                 -- the person who enrolled it
    device      TEXT NOT NULL,                 -- the name they gave it
    endpoint    TEXT NOT NULL UNIQUE,          -- the push service's URL for this subscription
    p256dh      TEXT NOT NULL,                 -- the browser's P-256 key, base64url
    auth        TEXT NOT NULL,                 -- its 16-byte secret, base64url
    created_at  TEXT NOT NULL                  -- RFC 3339
);
CREATE INDEX push_subscriptions_by_user ON push_subscriptions (user_id, created_at);
