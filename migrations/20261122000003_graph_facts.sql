-- Symbol-graph name facts per file (JSON: imports, exports, attributed references), kept so
-- that a file's edges can be re-resolved when a file it imports changes, without
-- re-parsing it.
CREATE TABLE file_facts (
    repo_id     TEXT NOT NULL,
    path        TEXT NOT NULL,
    facts       TEXT NOT NULL,
    PRIMARY KEY (repo_id, path),
    FOREIGN KEY (repo_id, path) REFERENCES files(repo_id, path) ON DELETE CASCADE
);

-- "Which files import this one": imports edges by target path.
CREATE INDEX edges_by_target_name ON edges (repo_id, kind, to_name);
