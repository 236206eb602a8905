//! The persistent embedding cache: [`VectorCache`] over the SQL metadata store, so every
//! replica and every restart shares the vectors already paid for.

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sqlx::Row;

use super::now_ms;
use super::sql::SqlMetaStore;
use crate::embed::{EmbedError, VectorCache};

/// Keys per `IN (…)` lookup: well under SQLite's and PostgreSQL's parameter limits.
const LOOKUP_CHUNK: usize = 500;

fn cache_err(e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Cache(e.to_string())
}

/// Encodes a vector as base64 of its little-endian f32 bytes.
pub fn encode_vector(v: &[f32]) -> String {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    STANDARD.encode(bytes)
}

/// Decodes [`encode_vector`]'s output.
pub fn decode_vector(text: &str) -> Option<Vec<f32>> {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip_through_text() {
        let v = vec![0.0, -1.5, f32::MIN_POSITIVE, 3.25e7];
        assert_eq!(decode_vector(&encode_vector(&v)), Some(v));
        assert_eq!(decode_vector("not base64!"), None);
        assert_eq!(decode_vector(&STANDARD.encode([1u8, 2, 3])), None);
    }
}
