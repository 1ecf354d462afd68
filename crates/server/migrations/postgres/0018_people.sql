-- The directory of people (crates/server/src/store/people.rs): who signed in, with the email and
-- groups their sign-in named, so an email channel that writes to approvers reaches each member
-- of an approver group (`group:NAME`) with links of their own. Keyed by the id `--auth` names
-- people by (the subject), the id `user:ID` matches and decisions record.
CREATE TABLE people (
    user_id      TEXT PRIMARY KEY NOT NULL,
    name         TEXT,
    email        TEXT,
    groups_json  TEXT NOT NULL,              -- a JSON array of strings, as logins.groups_json
    last_seen    TEXT NOT NULL               -- RFC 3339: their latest sign-in that was recorded
);
