-- A deadline index of deadlines only, as in migrations/sqlite/0009: most pending batches have
-- none, and an index of every pending batch took an entry when a batch opened and lost it when
-- it was decided, for nothing. (The ids here come from identity sequences, which need no
-- change: migrations/sqlite/0009 rebuilds SQLite's tables to drop AUTOINCREMENT.)
DROP INDEX batches_by_deadline;
CREATE INDEX batches_by_deadline ON batches (expires_at)
    WHERE state = 'pending' AND expires_at IS NOT NULL;
