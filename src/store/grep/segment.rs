//! Segments: immutable files holding some indexed files' contents and the trigram postings
//! over them, read through a memory map.
//!
//! Layout (little-endian), written front to back in one pass so that a segment of any
//! size is never held in memory whole:
//!
//! ```text
//! contents    the files' bytes, one after another
//! postings    per trigram, a serialized roaring bitmap of document numbers
//! directory   per trigram, sorted: trigram u32, postings offset u64, postings length u32
//! documents   per document: path, hash, language (each u32 length + UTF-8),
//!             content offset u64, content length u64
//! footer      directory offset u64, trigram count u32, documents offset u64,
//!             document count u32, magic "SXGREP01"
//! ```
//!
//! Written by [`write`] (new files) and [`merge`] (live documents of several segments);
//! both write to a temporary name and rename, so a segment file is whole or absent.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use roaring::RoaringBitmap;

use super::trigrams::{self, Plan, Trigram};
use crate::store::StoreError;

const MAGIC: &[u8; 8] = b"SXGREP01";
const FOOTER_LEN: usize = 8 + 4 + 8 + 4 + MAGIC.len();
const DIRECTORY_ENTRY: usize = 4 + 8 + 4;

/// One indexed file, as a segment lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocMeta {
    /// Path relative to the repository root.
    pub path: String,
    /// The content hash the metadata store records for this version.
    pub hash: String,
    /// Language id.
    pub language: String,
    offset: u64,
    len: u64,
}

/// A file to write into a new segment.
#[derive(Debug, Clone)]
pub struct NewDoc {
    /// Path relative to the repository root.
    pub path: String,
    /// Its content hash (as the metadata store records it).
    pub hash: String,
    /// Language id.
    pub language: String,
    /// The indexed content.
    pub content: Vec<u8>,
}

/// An open segment.
pub struct Segment {
    name: String,
    map: Mmap,
    docs: Vec<DocMeta>,
    directory: std::ops::Range<usize>,
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("name", &self.name)
            .field("docs", &self.docs.len())
            .field("bytes", &self.map.len())
            .finish()
    }
}

fn invalid(path: &Path, what: &str) -> StoreError {
    StoreError::Invalid(format!(
        "grep index segment {} is damaged ({what}); it is rebuilt by the next sync",
        path.display()
    ))
}

fn io(path: &Path, source: std::io::Error) -> StoreError {
    StoreError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// A little-endian reader over a byte slice that fails instead of panicking.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let out = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(out)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn string(&mut self) -> Option<String> {
        let len = self.u32()? as usize;
        String::from_utf8(self.take(len)?.to_vec()).ok()
    }
}

impl Segment {
    /// Opens the segment file at `path`.
    pub fn open(path: &Path) -> Result<Segment, StoreError> {
        let file = File::open(path).map_err(|e| io(path, e))?;
        // SAFETY: segment files are never written after their rename into place (new
        // versions get new names), so the mapped bytes do not change under the map.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| io(path, e))?;
        let len = map.len();
        if len < FOOTER_LEN || &map[len - MAGIC.len()..] != MAGIC {
            return Err(invalid(path, "no segment footer"));
        }
        let mut footer = Reader {
            bytes: &map[len - FOOTER_LEN..],
            at: 0,
        };
        let bad = || invalid(path, "footer out of range");
        let dir_off = footer.u64().ok_or_else(bad)? as usize;
        let dir_count = footer.u32().ok_or_else(bad)? as usize;
        let docs_off = footer.u64().ok_or_else(bad)? as usize;
        let doc_count = footer.u32().ok_or_else(bad)? as usize;
        let dir_end = dir_count
            .checked_mul(DIRECTORY_ENTRY)
            .and_then(|n| n.checked_add(dir_off))
            .filter(|&end| end <= docs_off && docs_off <= len - FOOTER_LEN)
            .ok_or_else(bad)?;
        let mut reader = Reader {
            bytes: &map[..len - FOOTER_LEN],
            at: docs_off,
        };
        let mut docs = Vec::with_capacity(doc_count.min(1 << 20));
        for _ in 0..doc_count {
            let doc = (|| {
                Some(DocMeta {
                    path: reader.string()?,
                    hash: reader.string()?,
                    language: reader.string()?,
                    offset: reader.u64()?,
                    len: reader.u64()?,
                })
            })()
            .filter(|d| {
                d.offset
                    .checked_add(d.len)
                    .is_some_and(|e| e as usize <= dir_off)
            })
            .ok_or_else(|| invalid(path, "document table out of range"))?;
            docs.push(doc);
        }
        Ok(Segment {
            name: file_name(path),
            map,
            docs,
            directory: dir_off..dir_end,
        })
    }

    /// The file name (its key in the manifest).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The documents, by number.
    pub fn docs(&self) -> &[DocMeta] {
        &self.docs
    }

    /// Size of the segment file.
    pub fn bytes(&self) -> u64 {
        self.map.len() as u64
    }

    /// The content of document `doc`.
    pub fn content(&self, doc: u32) -> &[u8] {
        match self.docs.get(doc as usize) {
            Some(d) => &self.map[d.offset as usize..(d.offset + d.len) as usize],
            None => &[],
        }
    }

    fn directory_len(&self) -> usize {
        self.directory.len() / DIRECTORY_ENTRY
    }

    /// Directory entry `i`: trigram and its postings' byte range.
    fn entry(&self, i: usize) -> (Trigram, std::ops::Range<usize>) {
        let at = self.directory.start + i * DIRECTORY_ENTRY;
        let raw = &self.map[at..at + DIRECTORY_ENTRY];
        let trigram = u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]);
        let offset = u64::from_le_bytes([
            raw[4], raw[5], raw[6], raw[7], raw[8], raw[9], raw[10], raw[11],
        ]) as usize;
        let len = u32::from_le_bytes([raw[12], raw[13], raw[14], raw[15]]) as usize;
        (trigram, offset..offset.saturating_add(len))
    }

    /// The postings of entry `i` (empty when they cannot be read).
    fn postings_at(&self, i: usize) -> RoaringBitmap {
        let (_, range) = self.entry(i);
        self.map
            .get(range)
            .and_then(|bytes| RoaringBitmap::deserialize_from(bytes).ok())
            .unwrap_or_default()
    }

    /// The documents containing `trigram`.
    pub fn postings(&self, trigram: Trigram) -> RoaringBitmap {
        let (mut lo, mut hi) = (0, self.directory_len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.entry(mid).0.cmp(&trigram) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return self.postings_at(mid),
            }
        }
        RoaringBitmap::new()
    }

    /// The documents `plan` admits.
    pub fn candidates(&self, plan: &Plan) -> RoaringBitmap {
        match plan {
            Plan::All => (0..self.docs.len() as u32).collect(),
            Plan::Trigrams(trigrams) => {
                let mut out: Option<RoaringBitmap> = None;
                for &t in trigrams {
                    let postings = self.postings(t);
                    let next = match out {
                        None => postings,
                        Some(acc) => acc & postings,
                    };
                    if next.is_empty() {
                        return next;
                    }
                    out = Some(next);
                }
                out.unwrap_or_default()
            }
            Plan::And(parts) => {
                let mut out: Option<RoaringBitmap> = None;
                for part in parts {
                    let next = match out {
                        None => self.candidates(part),
                        Some(acc) => acc & self.candidates(part),
                    };
                    if next.is_empty() {
                        return next;
                    }
                    out = Some(next);
                }
                out.unwrap_or_default()
            }
            Plan::Or(parts) => parts
                .iter()
                .fold(RoaringBitmap::new(), |acc, p| acc | self.candidates(p)),
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The segment being written: contents first, then postings, directory, documents and
/// footer.
struct Writer {
    path: PathBuf,
    tmp: PathBuf,
    out: BufWriter<File>,
    at: u64,
    docs: Vec<DocMeta>,
    directory: Vec<(Trigram, u64, u32)>,
}

impl Writer {
    fn create(path: &Path) -> Result<Writer, StoreError> {
        let tmp = path.with_extension("tmp");
        let file = File::create(&tmp).map_err(|e| io(&tmp, e))?;
        Ok(Writer {
            path: path.to_path_buf(),
            tmp,
            out: BufWriter::with_capacity(1 << 20, file),
            at: 0,
            docs: Vec::new(),
            directory: Vec::new(),
        })
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), StoreError> {
        self.out.write_all(bytes).map_err(|e| io(&self.tmp, e))?;
        self.at += bytes.len() as u64;
        Ok(())
    }

    fn content(
        &mut self,
        path: &str,
        hash: &str,
        language: &str,
        content: &[u8],
    ) -> Result<(), StoreError> {
        self.docs.push(DocMeta {
            path: path.to_string(),
            hash: hash.to_string(),
            language: language.to_string(),
            offset: self.at,
            len: content.len() as u64,
        });
        self.put(content)
    }

    fn postings(&mut self, trigram: Trigram, docs: &RoaringBitmap) -> Result<(), StoreError> {
        if docs.is_empty() {
            return Ok(());
        }
        let mut buf = Vec::with_capacity(docs.serialized_size());
        docs.serialize_into(&mut buf)
            .map_err(|e| io(&self.tmp, e))?;
        let len = u32::try_from(buf.len())
            .map_err(|_| StoreError::Invalid("a trigram's postings exceed 4 GiB".into()))?;
        self.directory.push((trigram, self.at, len));
        self.put(&buf)
    }

    fn finish(mut self) -> Result<(), StoreError> {
        let dir_off = self.at;
        let directory = std::mem::take(&mut self.directory);
        for (trigram, offset, len) in &directory {
            self.put(&trigram.to_le_bytes())?;
            self.put(&offset.to_le_bytes())?;
            self.put(&len.to_le_bytes())?;
        }
        let docs_off = self.at;
        let docs = std::mem::take(&mut self.docs);
        for doc in &docs {
            for s in [&doc.path, &doc.hash, &doc.language] {
                self.put(&(s.len() as u32).to_le_bytes())?;
                self.put(s.as_bytes())?;
            }
            self.put(&doc.offset.to_le_bytes())?;
            self.put(&doc.len.to_le_bytes())?;
        }
        let mut footer = Vec::with_capacity(FOOTER_LEN);
        footer.extend_from_slice(&dir_off.to_le_bytes());
        footer.extend_from_slice(&(directory.len() as u32).to_le_bytes());
        footer.extend_from_slice(&docs_off.to_le_bytes());
        footer.extend_from_slice(&(docs.len() as u32).to_le_bytes());
        footer.extend_from_slice(MAGIC);
        self.put(&footer)?;
        let file = self
            .out
            .into_inner()
            .map_err(|e| io(&self.tmp, e.into_error()))?;
        file.sync_data().map_err(|e| io(&self.tmp, e))?;
        std::fs::rename(&self.tmp, &self.path).map_err(|e| io(&self.path, e))
    }
}

/// Writes a segment of `docs` at `path`.
pub fn write(path: &Path, docs: &[NewDoc]) -> Result<(), StoreError> {
    let mut writer = Writer::create(path)?;
    let mut postings: std::collections::BTreeMap<Trigram, RoaringBitmap> = Default::default();
    for (number, doc) in docs.iter().enumerate() {
        writer.content(&doc.path, &doc.hash, &doc.language, &doc.content)?;
        for t in trigrams::of_content(&doc.content) {
            postings.entry(t).or_default().insert(number as u32);
        }
    }
    for (t, docs) in &postings {
        writer.postings(*t, docs)?;
    }
    writer.finish()
}

/// Writes at `path` one segment of the documents of `inputs` not in their deleted sets,
/// in input order.
pub fn merge(path: &Path, inputs: &[(&Segment, &RoaringBitmap)]) -> Result<(), StoreError> {
    let mut writer = Writer::create(path)?;
    // Old document number → new, per input (`u32::MAX`: deleted).
    let mut renumber: Vec<Vec<u32>> = Vec::with_capacity(inputs.len());
    let mut next = 0u32;
    for (segment, deleted) in inputs {
        let mut map = Vec::with_capacity(segment.docs.len());
        for (number, doc) in segment.docs.iter().enumerate() {
            if deleted.contains(number as u32) {
                map.push(u32::MAX);
                continue;
            }
            writer.content(
                &doc.path,
                &doc.hash,
                &doc.language,
                segment.content(number as u32),
            )?;
            map.push(next);
            next += 1;
        }
        renumber.push(map);
    }
    // A k-way merge of the sorted directories.
    let mut cursors = vec![0usize; inputs.len()];
    loop {
        let smallest = inputs
            .iter()
            .zip(&cursors)
            .filter(|(input, c)| **c < input.0.directory_len())
            .map(|(input, c)| input.0.entry(*c).0)
            .min();
        let Some(trigram) = smallest else { break };
        let mut union = RoaringBitmap::new();
        for (i, (segment, _)) in inputs.iter().enumerate() {
            let c = cursors[i];
            if c < segment.directory_len() && segment.entry(c).0 == trigram {
                let map = &renumber[i];
                union.extend(
                    segment
                        .postings_at(c)
                        .iter()
                        .filter_map(|old| map.get(old as usize).copied())
                        .filter(|&new| new != u32::MAX),
                );
                cursors[i] += 1;
            }
        }
        writer.postings(trigram, &union)?;
    }
    writer.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(path: &str, content: &str) -> NewDoc {
        NewDoc {
            path: path.into(),
            hash: format!("h-{path}"),
            language: "rust".into(),
            content: content.as_bytes().to_vec(),
        }
    }

    fn lookup(segment: &Segment, word: &str) -> Vec<String> {
        let plan = Plan::Trigrams(trigrams::of_content(word.as_bytes()));
        segment
            .candidates(&plan)
            .iter()
            .map(|d| segment.docs()[d as usize].path.clone())
            .collect()
    }

    #[test]
    fn a_written_segment_reads_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("1.seg");
        write(
            &path,
            &[
                doc("a.rs", "fn validate_token() {}"),
                doc("b.rs", "struct Token;"),
            ],
        )
        .expect("written");
        let segment = Segment::open(&path).expect("opened");
        assert_eq!(segment.docs().len(), 2);
        assert_eq!(segment.docs()[1].hash, "h-b.rs");
        assert_eq!(segment.content(1), b"struct Token;");
        assert_eq!(lookup(&segment, "token"), vec!["a.rs", "b.rs"]);
        assert_eq!(lookup(&segment, "VALIDATE"), vec!["a.rs"]);
        assert!(lookup(&segment, "absent").is_empty());
    }

    #[test]
    fn a_merge_keeps_live_documents_and_their_postings() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (p1, p2, out) = (
            dir.path().join("1.seg"),
            dir.path().join("2.seg"),
            dir.path().join("3.seg"),
        );
        write(&p1, &[doc("a.rs", "alpha beta"), doc("b.rs", "beta gamma")]).expect("written");
        write(&p2, &[doc("c.rs", "gamma delta")]).expect("written");
        let (s1, s2) = (
            Segment::open(&p1).expect("open"),
            Segment::open(&p2).expect("open"),
        );
        let deleted: RoaringBitmap = [0u32].into_iter().collect();
        merge(&out, &[(&s1, &deleted), (&s2, &RoaringBitmap::new())]).expect("merged");
        let merged = Segment::open(&out).expect("open");
        let paths: Vec<&str> = merged.docs().iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["b.rs", "c.rs"]);
        assert_eq!(merged.content(1), b"gamma delta");
        assert_eq!(lookup(&merged, "gamma"), vec!["b.rs", "c.rs"]);
        assert!(
            lookup(&merged, "alpha").is_empty(),
            "a deleted document's postings go"
        );
    }

    #[test]
    fn a_damaged_segment_is_refused_not_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("1.seg");
        write(&path, &[doc("a.rs", "fn main() {}")]).expect("written");
        let mut bytes = std::fs::read(&path).expect("read");
        let n = bytes.len();
        // The document table's offset points past the file.
        bytes[n - FOOTER_LEN + 12..n - FOOTER_LEN + 20].copy_from_slice(&u64::MAX.to_le_bytes());
        std::fs::write(&path, &bytes).expect("write");
        let err = Segment::open(&path).expect_err("refused");
        assert!(
            err.to_string().contains("rebuilt by the next sync"),
            "{err}"
        );
        std::fs::write(&path, b"short").expect("write");
        assert!(Segment::open(&path).is_err());
    }
}
