-- Content-addressed embedding cache: (model id, SHA-256 of input kind + text) -> vector.
-- Vectors are little-endian f32 bytes, base64-encoded (TEXT keeps the schema portable).

CREATE TABLE embedding_cache (
    model       TEXT NOT NULL,
    text_hash   TEXT NOT NULL,
    dims        BIGINT NOT NULL,
    vector      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (model, text_hash)
);
