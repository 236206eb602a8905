-- Credentials of git sources (the user name and password or token a URL carried), kept
-- apart from the repository row, whose `source` every token that sees the repository
-- may read. Only the fetch reads them; no API returns them.
CREATE TABLE repo_credentials (
    repo_id   TEXT PRIMARY KEY REFERENCES repositories(id) ON DELETE CASCADE,
    username  TEXT NOT NULL,
    password  TEXT
);

-- Facts about the data directory as a whole, such as the embedding model its vectors
-- were made with.
CREATE TABLE store_settings (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);
