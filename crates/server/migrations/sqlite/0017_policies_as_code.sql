-- Policies as code (docs/policies.md): what the gate needs to decide a call on any replica, and
-- what it decided.

-- The groups of the person who sent the task, as their sign-in named them then (a JSON array of
-- strings): a runner on another replica, or after a restart, evaluates the policies for the
-- same person.
ALTER TABLE tasks ADD COLUMN requester_groups TEXT NOT NULL DEFAULT '[]';

-- Why the call ran, waited or was refused: the rule, grant or policy that decided it, with an
-- ask's approvers, quorum and risk (JSON, `hitl::Why`); NULL for calls made before.
ALTER TABLE calls ADD COLUMN why TEXT;

-- A time-boxed grant: it stops applying at `expires_at` (RFC 3339), or once `uses_left` calls
-- used it (taken one at a time by a compare-and-set, so racing calls cannot overspend it). NULL:
-- no such limit.
ALTER TABLE policies ADD COLUMN expires_at TEXT;
ALTER TABLE policies ADD COLUMN uses_left INTEGER;
