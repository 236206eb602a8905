//! The persistent embedding cache: [`VectorCache`] over the SQL metadata store, so every
//! replica and every restart shares the vectors already paid for.

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};
use sqlx::Row;

use super::sql::{SqlMetaStore, placeholders};
use super::{StoreError, now_ms};
use crate::embed::{EmbedError, VectorCache};

/// Keys per `IN (…)` lookup: well under SQLite's and PostgreSQL's parameter limits.
const LOOKUP_CHUNK: usize = 500;

/// Rows moved per read while the text cache written before moves (see
/// [`SqlMetaStore::move_text_cache`]).
const MOVE_PAGE: i64 = 2_000;

fn cache_err(e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Cache(e.to_string())
}

/// The tag of a vector stored as half-precision floats in the text cache written before.
const HALF_TAG: &str = "h:";

/// `v` rounded to half precision, as the cache returns it once stored.
fn rounded(v: Vec<f32>) -> Vec<f32> {
    v.into_iter()
        .map(|x| half::f16::from_f32(x).to_f32())
        .collect()
}

/// A row's key: the first 16 bytes of the SHA-256 of the model id and the text's cache
/// key, so that one indexed column names one model's vector of one text.
fn row_key(model: &str, key: &str) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update(model.as_bytes());
    h.update([0]);
    h.update(key.as_bytes());
    h.finalize()[..16].to_vec()
}

/// A vector as the cache stores it: little-endian half-precision floats, the precision
/// the chunk store keeps (see `store::lance`).
pub fn encode_vector(v: &[f32]) -> Vec<u8> {
    v.iter()
        .flat_map(|x| half::f16::from_f32(*x).to_le_bytes())
        .collect()
}

/// Decodes [`encode_vector`]'s bytes; `None` for an odd length.
pub fn decode_vector(bytes: &[u8]) -> Option<Vec<f32>> {
    if !bytes.len().is_multiple_of(2) {
        return None;
    }
    Some(
        bytes
            .chunks_exact(2)
            .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
    )
}

/// Decodes a vector of the text cache written before: `h:` and base64 of half-precision
/// bytes, or untagged base64 of little-endian `f32` bytes (the first form).
pub fn decode_text_vector(text: &str) -> Option<Vec<f32>> {
    if let Some(half) = text.strip_prefix(HALF_TAG) {
        return decode_vector(&STANDARD.decode(half).ok()?);
    }
    let bytes = STANDARD.decode(text).ok()?;
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    Some(
        bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
    )
}

/// The vectors the cache holds for one model ([`SqlMetaStore::cached_models`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedModel {
    /// The model's id.
    pub model: String,
    /// Vectors cached.
    pub vectors: u64,
    /// Bytes of their stored form (keys and row overhead aside).
    pub bytes: u64,
}

impl SqlMetaStore {
    /// The models the embedding cache holds vectors of, by id. Vectors of a model the
    /// index no longer uses are kept (going back to it costs no embedding) until
    /// [`SqlMetaStore::forget_cached_vectors`].
    pub async fn cached_models(&self) -> Result<Vec<CachedModel>, StoreError> {
        let rows = sqlx::query(
            "SELECT model, COUNT(*) AS vectors, SUM(LENGTH(vector)) AS bytes \
             FROM vector_cache GROUP BY model ORDER BY model",
        )
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|row| {
                let vectors: i64 = row.try_get("vectors")?;
                let bytes: i64 = row.try_get("bytes")?;
                Ok(CachedModel {
                    model: row.try_get("model")?,
                    vectors: vectors.max(0) as u64,
                    bytes: bytes.max(0) as u64,
                })
            })
            .collect()
    }

    /// Drops every cached vector of `model`; returns how many there were.
    pub async fn forget_cached_vectors(&self, model: &str) -> Result<u64, StoreError> {
        Ok(sqlx::query("DELETE FROM vector_cache WHERE model = $1")
            .bind(model)
            .execute(self.pool())
            .await?
            .rows_affected())
    }

    /// Moves the vectors cached as text (before migration 11) to the compact table, if
    /// any wait: read a page at a time, decoded, keyed anew and inserted, then the old
    /// table dropped (SQLite: and the file vacuumed). One transaction; a replica that
    /// comes second finds nothing waiting. A row that does not decode is dropped (the
    /// text is embedded again when next needed).
    pub(super) async fn move_text_cache(&self) -> Result<(), StoreError> {
        let Some(mut tx) = self.move_waiting("embedding_cache_as_text").await? else {
            return Ok(());
        };
        let mut moved = 0u64;
        let mut after: Option<(String, String)> = None;
        loop {
            // Keyset pages in primary-key order (no OFFSET rescans).
            let page = match &after {
                None => sqlx::query(
                    "SELECT model, text_hash, vector, created_at FROM embedding_cache \
                     ORDER BY model, text_hash LIMIT $1",
                )
                .bind(MOVE_PAGE),
                Some((model, hash)) => sqlx::query(
                    "SELECT model, text_hash, vector, created_at FROM embedding_cache \
                     WHERE model > $1 OR (model = $1 AND text_hash > $2) \
                     ORDER BY model, text_hash LIMIT $3",
                )
                .bind(model.clone())
                .bind(hash.clone())
                .bind(MOVE_PAGE),
            }
            .fetch_all(&mut *tx)
            .await?;
            if page.is_empty() {
                break;
            }
            if moved == 0 {
                tracing::info!("moving the embedding cache to its compact table (once)");
            }
            for row in &page {
                let (model, hash): (String, String) = (row.try_get(0)?, row.try_get(1)?);
                let (text, created_at): (String, i64) = (row.try_get(2)?, row.try_get(3)?);
                if let Some(vector) = decode_text_vector(&text) {
                    sqlx::query(
                        "INSERT INTO vector_cache (key, model, vector, created_at) \
                         VALUES ($1, $2, $3, $4) ON CONFLICT (key) DO NOTHING",
                    )
                    .bind(row_key(&model, &hash))
                    .bind(&model)
                    .bind(encode_vector(&vector))
                    .bind(created_at)
                    .execute(&mut *tx)
                    .await?;
                    moved += 1;
                }
                after = Some((model, hash));
            }
        }
        sqlx::query("DROP TABLE embedding_cache")
            .execute(&mut *tx)
            .await?;
        self.finish_move(tx, moved).await
    }
}

#[async_trait]
impl VectorCache for SqlMetaStore {
    async fn get_vectors(
        &self,
        model: &str,
        keys: &[String],
    ) -> Result<Vec<Option<Vec<f32>>>, EmbedError> {
        let row_keys: Vec<Vec<u8>> = keys.iter().map(|k| row_key(model, k)).collect();
        let mut found = std::collections::HashMap::with_capacity(keys.len());
        for chunk in row_keys.chunks(LOOKUP_CHUNK) {
            // Only `$N` placeholders are formatted in; every value is bound.
            let sql = format!(
                "SELECT key, vector FROM vector_cache WHERE key IN ({})",
                placeholders(1, chunk.len())
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
            for key in chunk {
                query = query.bind(key.clone());
            }
            for row in query.fetch_all(self.pool()).await.map_err(cache_err)? {
                let key: Vec<u8> = row.try_get("key").map_err(cache_err)?;
                let vector: Vec<u8> = row.try_get("vector").map_err(cache_err)?;
                // A row that does not decode is treated as absent and re-embedded.
                if let Some(v) = decode_vector(&vector) {
                    found.insert(key, v);
                }
            }
        }
        Ok(row_keys.iter().map(|k| found.get(k).cloned()).collect())
    }

    async fn put_vectors(
        &self,
        model: &str,
        entries: &[(String, Vec<f32>)],
    ) -> Result<(), EmbedError> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut tx = self.pool().begin().await.map_err(cache_err)?;
        let now = now_ms();
        for (key, vector) in entries {
            sqlx::query(
                "INSERT INTO vector_cache (key, model, vector, created_at) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (key) DO NOTHING",
            )
            .bind(row_key(model, key))
            .bind(model)
            .bind(encode_vector(vector))
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(cache_err)?;
        }
        tx.commit().await.map_err(cache_err)?;
        Ok(())
    }

    async fn trim(&self, model: &str, keep: u64) -> Result<u64, EmbedError> {
        let held: i64 = sqlx::query("SELECT COUNT(*) FROM vector_cache WHERE model = $1")
            .bind(model)
            .fetch_one(self.pool())
            .await
            .and_then(|row| row.try_get(0))
            .map_err(cache_err)?;
        let over = (held.max(0) as u64).saturating_sub(keep);
        if over == 0 {
            return Ok(0);
        }
        // The oldest first: a scan of the model's rows, once a sync's vectors are in.
        Ok(sqlx::query(
            "DELETE FROM vector_cache WHERE key IN (SELECT key FROM vector_cache \
             WHERE model = $1 ORDER BY created_at, key LIMIT $2)",
        )
        .bind(model)
        .bind(over as i64)
        .execute(self.pool())
        .await
        .map_err(cache_err)?
        .rows_affected())
    }

    fn as_stored(&self, vector: Vec<f32>) -> Vec<f32> {
        rounded(vector)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip_through_half_precision_bytes() {
        // Values half precision holds exactly come back exactly.
        let v = vec![0.0, -1.5, 0.125, 2048.0];
        assert_eq!(encode_vector(&v).len(), 8);
        assert_eq!(decode_vector(&encode_vector(&v)), Some(v));
        // Others within half precision's relative step (2^-11).
        let v = [0.123_456_7f32, -0.987_654_3, 1e-3];
        let back = decode_vector(&encode_vector(&v)).unwrap();
        for (a, b) in v.iter().zip(&back) {
            assert!((a - b).abs() <= a.abs() / 1024.0, "{a} -> {b}");
        }
        assert_eq!(rounded(v.to_vec()), back, "as_stored is what comes back");
        assert_eq!(decode_vector(&[1, 2, 3]), None);
    }

    #[test]
    fn the_text_cache_written_before_decodes() {
        let half: Vec<u8> = encode_vector(&[0.5, -2.0]);
        assert_eq!(
            decode_text_vector(&format!("h:{}", STANDARD.encode(half))),
            Some(vec![0.5, -2.0])
        );
        // The first form: untagged f32 bytes.
        let old: Vec<u8> = [0.5f32, 3.25e7]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        assert_eq!(
            decode_text_vector(&STANDARD.encode(old)),
            Some(vec![0.5, 3.25e7])
        );
        assert_eq!(decode_text_vector("not base64!"), None);
        assert_eq!(decode_text_vector("h:not base64!"), None);
        assert_eq!(decode_text_vector(&STANDARD.encode([1u8, 2, 3])), None);
        assert_eq!(
            decode_text_vector(&format!("h:{}", STANDARD.encode([1u8, 2, 3]))),
            None
        );
    }

    #[test]
    fn a_row_key_names_the_model_and_the_text() {
        assert_eq!(row_key("m", "k").len(), 16);
        assert_eq!(row_key("m", "k"), row_key("m", "k"));
        assert_ne!(row_key("m", "k"), row_key("n", "k"));
        assert_ne!(row_key("m", "k"), row_key("m", "j"));
        // The separator keeps the model's and the key's bytes apart.
        assert_ne!(row_key("ab", "c"), row_key("a", "bc"));
    }
}
