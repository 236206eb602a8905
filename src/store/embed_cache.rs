//! The persistent embedding cache: [`VectorCache`] over the SQL metadata store, so every
//! replica and every restart shares the vectors already paid for.

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sqlx::Row;

use super::sql::SqlMetaStore;
use super::{StoreError, now_ms};
use crate::embed::{EmbedError, VectorCache};

/// Keys per `IN (…)` lookup: well under SQLite's and PostgreSQL's parameter limits.
const LOOKUP_CHUNK: usize = 500;

fn cache_err(e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Cache(e.to_string())
}

/// The tag of a vector stored as half-precision floats.
const HALF_TAG: &str = "h:";

/// `v` rounded to half precision, as [`decode_vector`] returns it once encoded.
fn rounded(v: Vec<f32>) -> Vec<f32> {
    v.into_iter()
        .map(|x| half::f16::from_f32(x).to_f32())
        .collect()
}

/// Encodes a vector as `h:` and base64 of its little-endian half-precision bytes: the
/// precision the chunk store keeps (see `store::lance`), at half the bytes of `f32`.
pub fn encode_vector(v: &[f32]) -> String {
    let bytes: Vec<u8> = v
        .iter()
        .flat_map(|x| half::f16::from_f32(*x).to_le_bytes())
        .collect();
    format!("{HALF_TAG}{}", STANDARD.encode(bytes))
}

/// Decodes [`encode_vector`]'s output, and the untagged base64 of little-endian `f32`
/// bytes that caches written before hold.
pub fn decode_vector(text: &str) -> Option<Vec<f32>> {
    if let Some(half) = text.strip_prefix(HALF_TAG) {
        let bytes = STANDARD.decode(half).ok()?;
        if bytes.len() % 2 != 0 {
            return None;
        }
        return Some(
            bytes
                .chunks_exact(2)
                .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
        );
    }
    let bytes = STANDARD.decode(text).ok()?;
    if bytes.len() % 4 != 0 {
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
             FROM embedding_cache GROUP BY model ORDER BY model",
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
        Ok(sqlx::query("DELETE FROM embedding_cache WHERE model = $1")
            .bind(model)
            .execute(self.pool())
            .await?
            .rows_affected())
    }
}

#[async_trait]
impl VectorCache for SqlMetaStore {
    async fn get_vectors(
        &self,
        model: &str,
        keys: &[String],
    ) -> Result<Vec<Option<Vec<f32>>>, EmbedError> {
        let mut found = std::collections::HashMap::with_capacity(keys.len());
        for chunk in keys.chunks(LOOKUP_CHUNK) {
            let placeholders: Vec<String> =
                (0..chunk.len()).map(|i| format!("${}", i + 2)).collect();
            // Only `$N` placeholders are formatted in; every value is bound.
            let sql = format!(
                "SELECT text_hash, vector FROM embedding_cache WHERE model = $1 AND text_hash IN ({})",
                placeholders.join(", ")
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(model);
            for key in chunk {
                query = query.bind(key);
            }
            for row in query.fetch_all(self.pool()).await.map_err(cache_err)? {
                let hash: String = row.try_get("text_hash").map_err(cache_err)?;
                let vector: String = row.try_get("vector").map_err(cache_err)?;
                // A row that does not decode is treated as absent and re-embedded.
                if let Some(v) = decode_vector(&vector) {
                    found.insert(hash, v);
                }
            }
        }
        Ok(keys.iter().map(|k| found.get(k).cloned()).collect())
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
                "INSERT INTO embedding_cache (model, text_hash, dims, vector, created_at) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (model, text_hash) DO NOTHING",
            )
            .bind(model)
            .bind(key)
            .bind(vector.len() as i64)
            .bind(encode_vector(vector))
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(cache_err)?;
        }
        tx.commit().await.map_err(cache_err)?;
        Ok(())
    }

    fn as_stored(&self, vector: Vec<f32>) -> Vec<f32> {
        rounded(vector)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip_through_text() {
        // Values half precision holds exactly come back exactly.
        let v = vec![0.0, -1.5, 0.125, 2048.0];
        let text = encode_vector(&v);
        assert!(text.starts_with("h:"), "{text}");
        assert_eq!(decode_vector(&text), Some(v));
        // Others within half precision's relative step (2^-11).
        let v = [0.123_456_7f32, -0.987_654_3, 1e-3];
        let back = decode_vector(&encode_vector(&v)).unwrap();
        for (a, b) in v.iter().zip(&back) {
            assert!((a - b).abs() <= a.abs() / 1024.0, "{a} -> {b}");
        }
        assert_eq!(rounded(v.to_vec()), back, "as_stored is what comes back");
        // Caches written before hold untagged f32 bytes.
        let old: Vec<u8> = [0.5f32, 3.25e7]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        assert_eq!(
            decode_vector(&STANDARD.encode(old)),
            Some(vec![0.5, 3.25e7])
        );
        assert_eq!(decode_vector("not base64!"), None);
        assert_eq!(decode_vector("h:not base64!"), None);
        assert_eq!(decode_vector(&STANDARD.encode([1u8, 2, 3])), None);
        assert_eq!(
            decode_vector(&format!("h:{}", STANDARD.encode([1u8, 2, 3]))),
            None
        );
    }
}
