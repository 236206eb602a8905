-- Retries with back-off: a job that failed because a store did not answer (the database
-- or object storage) goes back to the queue with `not_before` (ms since epoch) set a
-- little later each attempt; no process claims it before then, so an outage of a minute
-- is ridden out instead of spending every attempt at once.
ALTER TABLE jobs ADD COLUMN not_before BIGINT;
