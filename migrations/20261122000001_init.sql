-- Sextant metadata schema, version 1.
-- Portable SQL accepted by both SQLite (3.35+) and PostgreSQL (12+): TEXT and BIGINT only,
-- booleans as 0/1, timestamps as milliseconds since the Unix epoch, JSON as TEXT.

CREATE TABLE repositories (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL UNIQUE,
    source_kind     TEXT NOT NULL,
    source          TEXT NOT NULL,
    tracked_ref     TEXT,
    indexed_commit  TEXT,
    status          TEXT NOT NULL,
    last_error      TEXT,
    settings        TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);

CREATE TABLE files (
    repo_id         TEXT NOT NULL REFERENCES repositories(id) ON DELETE CASCADE,
    path            TEXT NOT NULL,
    language        TEXT,
    content_hash    TEXT,
    mtime_ms        BIGINT,
    size_bytes      BIGINT NOT NULL,
    line_count      BIGINT NOT NULL,
    symbol_count    BIGINT NOT NULL,
    indexed_at      BIGINT,
    skip_reason     TEXT,
    PRIMARY KEY (repo_id, path)
);

CREATE TABLE symbols (
    repo_id         TEXT NOT NULL,
    file_path       TEXT NOT NULL,
    chunk_id        TEXT NOT NULL,
    ordinal         BIGINT NOT NULL,
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
    PRIMARY KEY (repo_id, chunk_id),
    FOREIGN KEY (repo_id, file_path) REFERENCES files(repo_id, path) ON DELETE CASCADE
);
CREATE INDEX symbols_by_name ON symbols (name);
CREATE INDEX symbols_by_file ON symbols (repo_id, file_path);

-- Symbol-graph edges, owned by the file of their source symbol (rebuilt with it).
CREATE TABLE edges (
    repo_id         TEXT NOT NULL,
    file_path       TEXT NOT NULL,
    from_chunk      TEXT NOT NULL,
    to_chunk        TEXT,
    to_name         TEXT NOT NULL,
    kind            TEXT NOT NULL,
    certain         BIGINT NOT NULL,
    line            BIGINT,
    FOREIGN KEY (repo_id, file_path) REFERENCES files(repo_id, path) ON DELETE CASCADE
);
CREATE INDEX edges_from ON edges (repo_id, from_chunk);
CREATE INDEX edges_to ON edges (repo_id, to_chunk);
CREATE INDEX edges_by_file ON edges (repo_id, file_path);

-- Durable job queue.
CREATE TABLE jobs (
    id              TEXT PRIMARY KEY,
    repo_id         TEXT REFERENCES repositories(id) ON DELETE CASCADE,
    kind            TEXT NOT NULL,
    state           TEXT NOT NULL,
    progress_done   BIGINT NOT NULL,
    progress_total  BIGINT NOT NULL,
    message         TEXT,
    error           TEXT,
    attempts        BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    started_at      BIGINT,
    finished_at     BIGINT,
    updated_at      BIGINT NOT NULL
);
CREATE INDEX jobs_by_state ON jobs (state, created_at);
CREATE INDEX jobs_by_repo ON jobs (repo_id, created_at);

-- API tokens: only the SHA-256 of the secret is stored.
CREATE TABLE api_tokens (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    token_hash      TEXT NOT NULL UNIQUE,
    scope           TEXT NOT NULL,
    repositories    TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    revoked_at      BIGINT
);
