-- Symbols and edges keyed by a number per file instead of the repository id and path.
--
-- Every symbol and edge row, and every entry of their five indexes, repeated its file's
-- repository id (32 characters) and path (44 on average): at a million lines 102 MB of
-- edges and 56 MB of symbols, more than the source itself. A file's `file_id` is a
-- 64-bit number the store derives from its repository id and path (the first eight bytes
-- of their SHA-256), so any process computes it without asking the database; a row's
-- repository and path come from `files` by that number.
--
-- The rows written before move in the store's first open after this migration (the
-- `graph_rows_by_path` setting says they are waiting): it numbers every file, copies
-- `symbols_by_path` and `edges_by_path` over by a join on `files`, and drops them.

ALTER TABLE files ADD COLUMN file_id BIGINT;
CREATE UNIQUE INDEX files_by_file_id ON files (file_id);

DROP INDEX symbols_by_name;
DROP INDEX symbols_by_file;
DROP INDEX edges_from;
DROP INDEX edges_to;
DROP INDEX edges_by_file;
DROP INDEX edges_by_target_name;
ALTER TABLE symbols RENAME TO symbols_by_path;
ALTER TABLE edges RENAME TO edges_by_path;

CREATE TABLE symbols (
    file_id         BIGINT NOT NULL REFERENCES files(file_id) ON DELETE CASCADE,
    ordinal         BIGINT NOT NULL,
    chunk_id        TEXT NOT NULL,
    name            TEXT NOT NULL,
    kind            TEXT NOT NULL,
    parent_chunk_id TEXT,
    parent_name     TEXT,
    breadcrumb      TEXT NOT NULL,
    signature       TEXT NOT NULL,
    modifiers       TEXT NOT NULL,
    exported        BIGINT NOT NULL,
    depth           BIGINT NOT NULL,
    start_line      BIGINT NOT NULL,
    end_line        BIGINT NOT NULL,
    -- Named: PostgreSQL's default name (`symbols_pkey`) is still the renamed table's.
    CONSTRAINT symbols_by_file_ordinal PRIMARY KEY (file_id, ordinal)
);
-- By chunk id; unique within a file (a chunk id names its path, so within a repository).
CREATE UNIQUE INDEX symbols_by_chunk ON symbols (chunk_id, file_id);
CREATE INDEX symbols_by_name ON symbols (name);

CREATE TABLE edges (
    file_id         BIGINT NOT NULL REFERENCES files(file_id) ON DELETE CASCADE,
    from_chunk      TEXT NOT NULL,
    to_chunk        TEXT,
    to_name         TEXT NOT NULL,
    kind            TEXT NOT NULL,
    certain         BIGINT NOT NULL,
    line            BIGINT
);
CREATE INDEX edges_by_file ON edges (file_id);
CREATE INDEX edges_from ON edges (from_chunk);
-- Only resolved edges have a target chunk (a third have none).
CREATE INDEX edges_to ON edges (to_chunk) WHERE to_chunk IS NOT NULL;
-- "Which files import this one": imports edges by target path. Only imports are asked
-- for by name (6 % of the edges at a million lines), so only they are in the index.
CREATE INDEX edges_by_target_name ON edges (to_name) WHERE kind = 'imports';

INSERT INTO store_settings (key, value) VALUES ('graph_rows_by_path', 'waiting');
