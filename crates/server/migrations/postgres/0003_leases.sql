-- Which replica drives a task, until when (the database's clock decides expiry, so replicas'
-- clocks need not agree). A replica renews its leases while it runs; when it dies, another
-- takes the task over once the lease has expired.
ALTER TABLE tasks ADD COLUMN lease_owner TEXT;
ALTER TABLE tasks ADD COLUMN lease_until TIMESTAMPTZ;
CREATE INDEX tasks_by_lease_owner ON tasks (lease_owner) WHERE lease_owner IS NOT NULL;
