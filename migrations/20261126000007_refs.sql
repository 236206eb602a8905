-- Refs beyond a repository's default one (branches, tags, commits): each tracked ref is
-- a repository row of its own whose `parent_id` names the repository it belongs to. It
-- holds only what differs from the parent's indexed commit: the files changed or added
-- on the ref, and a record (no chunks) for each file the ref deletes or renames away.
ALTER TABLE repositories ADD COLUMN parent_id TEXT;
CREATE INDEX repositories_by_parent ON repositories(parent_id);
