-- Which replica drives a task, until when. One process owns an SQLite file, so the SQLite
-- backend never takes leases; the columns keep the two backends' schemas alike.
ALTER TABLE tasks ADD COLUMN lease_owner TEXT;
ALTER TABLE tasks ADD COLUMN lease_until TEXT;
