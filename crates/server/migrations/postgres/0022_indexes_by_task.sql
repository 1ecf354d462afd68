-- Rows read by their task: whether a person already voted on a task's batch (every A2A
-- decision reads it), a task's hand-overs and ladder steps, its audit rows, and its latest
-- batch (a late decision is told why it came too late). Without these indexes each such read
-- scanned the whole table, so deciding grew slower with every decision behind it: at 1,000
-- concurrent approve cycles the server spent a fifth more CPU per cycle. PostgreSQL had the
-- decisions one already; `IF NOT EXISTS` keeps one file for both backends.
CREATE INDEX IF NOT EXISTS call_votes_by_task ON call_votes (task_id, user_id);
CREATE INDEX IF NOT EXISTS batch_steps_by_task ON batch_steps (task_id, id);
CREATE INDEX IF NOT EXISTS decisions_by_task ON decisions (task_id, id);
CREATE INDEX IF NOT EXISTS batches_by_task ON batches (task_id, id);
