-- Chunk ids in the symbol graph as 16 bytes instead of 32 hexadecimal characters.
--
-- A chunk id (the first 32 hex characters of a SHA-256) appeared in every symbol row
-- twice (its own and its parent's), in every edge row twice (from and to), and again in
-- the three indexes that look rows up by them: at a million lines a quarter of the
-- graph's 74 MB. Here each is its 16 bytes (`store::sql::chunk_key`; an id that is not
-- 32 lowercase hex characters, as tests write, is kept as its UTF-8 bytes). `BYTEA` is
-- PostgreSQL's binary type; SQLite gives the name numeric affinity, which stores blobs as
-- they are.
--
-- The rows written before move in the store's first open after this migration (the
-- `graph_chunk_ids_as_text` setting says they are waiting): converted by one
-- `INSERT … SELECT` per table, and the old tables dropped.

DROP INDEX symbols_by_chunk;
DROP INDEX symbols_by_name;
DROP INDEX edges_by_file;
DROP INDEX edges_from;
DROP INDEX edges_to;
DROP INDEX edges_by_target_name;
ALTER TABLE symbols RENAME TO symbols_text_ids;
ALTER TABLE edges RENAME TO edges_text_ids;

CREATE TABLE symbols (
    file_id         BIGINT NOT NULL REFERENCES files(file_id) ON DELETE CASCADE,
    ordinal         BIGINT NOT NULL,
    chunk_id        BYTEA NOT NULL,
    name            TEXT NOT NULL,
    kind            TEXT NOT NULL,
    parent_chunk_id BYTEA,
    parent_name     TEXT,
    breadcrumb      TEXT NOT NULL,
    signature       TEXT NOT NULL,
    modifiers       TEXT NOT NULL,
    exported        BIGINT NOT NULL,
    depth           BIGINT NOT NULL,
    start_line      BIGINT NOT NULL,
    end_line        BIGINT NOT NULL,
    -- Named: PostgreSQL's default name is still the renamed table's.
    CONSTRAINT symbols_by_file_position PRIMARY KEY (file_id, ordinal)
);
-- By chunk id; unique within a file (a chunk id names its path, so within a repository).
CREATE UNIQUE INDEX symbols_by_chunk ON symbols (chunk_id, file_id);
CREATE INDEX symbols_by_name ON symbols (name);

CREATE TABLE edges (
    file_id         BIGINT NOT NULL REFERENCES files(file_id) ON DELETE CASCADE,
    from_chunk      BYTEA NOT NULL,
    to_chunk        BYTEA,
    to_name         TEXT NOT NULL,
    kind            TEXT NOT NULL,
    certain         BIGINT NOT NULL,
    line            BIGINT
);
CREATE INDEX edges_by_file ON edges (file_id);
CREATE INDEX edges_from ON edges (from_chunk);
-- Only resolved edges have a target chunk (a third have none).
CREATE INDEX edges_to ON edges (to_chunk) WHERE to_chunk IS NOT NULL;
-- "Which files import this one": only imports are asked for by name.
CREATE INDEX edges_by_target_name ON edges (to_name) WHERE kind = 'imports';

INSERT INTO store_settings (key, value) VALUES ('graph_chunk_ids_as_text', 'waiting');
