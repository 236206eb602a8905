//! Deterministic chunk ids.

use sha2::{Digest, Sha256};

use crate::parse::ParsedSymbol;

/// Ids for a list of siblings under `parent_id` (empty at the root).
///
/// id = first 32 hex chars of SHA-256(path, parent id, kind, name, ordinal), where the
/// ordinal counts earlier siblings with the same kind and name, so duplicate names (two
/// `describe('x')` callbacks, redeclared `var`s) stay distinct and ids do not move when
/// unrelated code changes.
pub fn sibling_ids(path: &str, parent_id: &str, siblings: &[ParsedSymbol]) -> Vec<String> {
    let mut seen: Vec<(&str, &str, usize)> = Vec::new();
    siblings
        .iter()
        .map(|s| {
            let kind = s.kind.as_str();
            let ordinal = match seen.iter_mut().find(|(k, n, _)| *k == kind && *n == s.name) {
                Some(entry) => {
                    entry.2 += 1;
                    entry.2
                }
                None => {
                    seen.push((kind, &s.name, 0));
                    0
                }
            };
            id_of(&[path, parent_id, kind, &s.name, &ordinal.to_string()])
        })
        .collect()
}

/// First 32 hex characters of SHA-256 over `parts`, each followed by a NUL byte.
pub fn id_of(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0u8]);
    }
    let digest = hasher.finalize();
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}
