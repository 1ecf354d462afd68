-- Browser sign-ins of `--auth oidc` (crates/server/src/http/auth/oidc.rs): the sessions people
-- hold a cookie for, and the sign-ins on their way through the provider. Named logins: a chat is
-- a session already.

-- A signed-in browser. Only the SHA-256 of its cookie is kept, so reading the database gives no
-- live session. It ends at `expires_at` (the ID token's expiry) unless a refresh token renews it.
CREATE TABLE logins (
    id_sha256      TEXT PRIMARY KEY NOT NULL,  -- hex
    subject        TEXT NOT NULL,
    name           TEXT,
    email          TEXT,
    groups_json    TEXT NOT NULL,              -- a JSON array of strings
    refresh_token  TEXT,
    id_token       TEXT,                       -- the hint for the provider's logout
    expires_at     TEXT NOT NULL,
    created_at     TEXT NOT NULL
);

-- A sign-in sent to the provider and not back yet: its `state`'s SHA-256, the PKCE verifier,
-- the nonce and the page to return to. Taken (deleted) by the callback, once.
CREATE TABLE login_attempts (
    state_sha256   TEXT PRIMARY KEY NOT NULL,  -- hex
    pkce_verifier  TEXT NOT NULL,
    nonce          TEXT NOT NULL,
    return_to      TEXT NOT NULL,
    created_at     TEXT NOT NULL
);
