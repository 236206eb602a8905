-- Job leases: a claimed job is held by one process (`lease_owner`, a replica's name)
-- until `lease_until` (ms since epoch), which its runner renews while the job runs. A
-- job whose lease has run out (its process died) goes back to the queue for any replica
-- to take; a running job's lease is also the lock on its repository (one running job
-- per repository).
ALTER TABLE jobs ADD COLUMN lease_owner TEXT;
ALTER TABLE jobs ADD COLUMN lease_until BIGINT;
CREATE INDEX jobs_by_repo_state ON jobs (repo_id, state);
