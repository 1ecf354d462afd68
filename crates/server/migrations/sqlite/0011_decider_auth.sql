-- How the person who decided was authenticated (`--auth`): none, tokens, proxy, oidc_session or
-- oidc_jwt. NULL for a decision no request made (a policy, a rule, an expiry) and for decisions
-- recorded before this column.
ALTER TABLE decisions ADD COLUMN decider_auth TEXT;
