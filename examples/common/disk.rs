//! What the storage examples share: the size of a directory on disk.

use std::path::Path;

/// Bytes of the files under `dir` (0 for a directory that cannot be read).
pub fn dir_bytes(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}
