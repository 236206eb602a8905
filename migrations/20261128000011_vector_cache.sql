-- The embedding cache, compact: one 16-byte key, the vector as half-precision bytes.
--
-- `embedding_cache` kept each vector as base64 text (a third more than its bytes) under
-- the model id and a 64-character hex hash, repeated in its primary-key index: about
-- 1.2 kB a 384-dimensional vector, more than the chunk store's copy of it. Here a row is
-- its key (the first 16 bytes of the SHA-256 of the model id and the text's hash), the
-- model id (for listing and forgetting a model's vectors), the little-endian
-- half-precision floats and when it was written: about 0.8 kB.
--
-- `BYTEA` is PostgreSQL's binary type; SQLite gives the name numeric affinity, which
-- stores blobs as they are.
--
-- The rows written before move in the store's first open after this migration (the
-- `embedding_cache_as_text` setting says they are waiting): decoded, keyed anew, and
-- the old table dropped.

CREATE TABLE vector_cache (
    key         BYTEA NOT NULL PRIMARY KEY,
    model       TEXT NOT NULL,
    vector      BYTEA NOT NULL,
    created_at  BIGINT NOT NULL
);

INSERT INTO store_settings (key, value) VALUES ('embedding_cache_as_text', 'waiting');
