//! Segments: immutable files holding some indexed files' contents and the trigram postings
//! over them, read through a memory map.
//!
//! Layout (little-endian), written front to back in one pass so that a segment of any
//! size is never held in memory whole:
//!
//! ```text
//! contents    the files' bytes, one after another, each compressed with zstd (a
//!             segment written before compression, magic "SXGREP01", holds them as they
//!             are; both read)
//! postings    per trigram, a serialized roaring bitmap of document numbers
//! directory   per trigram, sorted: trigram u32, postings offset u64, postings length u32
//! documents   per document: path, hash, language (each u32 length + UTF-8),
//!             content offset u64, content length u64
//! footer      directory offset u64, trigram count u32, documents offset u64,
//!             document count u32, magic "SXGREP02"
//! ```
//!
//! Contents are compressed one file at a time (zstd level 3: a file of code takes a
//! quarter to a third of its size), so a search reads only the files its trigrams admit,
//! each decompressed as it is read (hundreds of MB a second); merges copy compressed
//! contents as they are.
//!
//! Written by [`write`] (new files) and [`merge`] (live documents of several segments);
//! both write to a temporary name and rename, so a segment file is whole or absent.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use roaring::RoaringBitmap;

use super::trigrams::{self, Plan, Trigram};
use crate::store::StoreError;

const MAGIC: &[u8; 8] = b"SXGREP02";
/// The magic of segments whose contents are stored uncompressed (written before).
const MAGIC_PLAIN: &[u8; 8] = b"SXGREP01";
/// zstd's level for contents: its default, fast to write and within a few per cent of
/// the best for code.
const LEVEL: i32 = 3;
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
    /// Whether contents are zstd frames (`MAGIC`) or the files' bytes (`MAGIC_PLAIN`).
    compressed: bool,
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
        let compressed = match map.get(len.saturating_sub(MAGIC.len())..) {
            _ if len < FOOTER_LEN => return Err(invalid(path, "no segment footer")),
            Some(magic) if magic == MAGIC => true,
            Some(magic) if magic == MAGIC_PLAIN => false,
            _ => return Err(invalid(path, "no segment footer")),
        };
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
            compressed,
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

    /// The content of document `doc`, decompressed (an error when its stored bytes do
    /// not decompress: the segment is damaged).
    pub fn content(&self, doc: u32) -> Result<Cow<'_, [u8]>, StoreError> {
        let stored = self.stored(doc);
        if !self.compressed {
            return Ok(Cow::Borrowed(stored));
        }
        decompress(stored).map(Cow::Owned).map_err(|e| {
            StoreError::Invalid(format!(
                "grep index segment {} is damaged (document {doc} does not decompress: {e}); \
                 remove the repository (`sextant repo remove`) and add it again to rebuild it",
                self.name
            ))
        })
    }

    /// Document `doc`'s bytes as the segment holds them.
    fn stored(&self, doc: u32) -> &[u8] {
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

/// The largest content a document may claim (a damaged frame header asks for no more).
const MAX_CONTENT: u64 = 1 << 32;

thread_local! {
    /// Each thread's decompression context, kept: making one per document cost ten times
    /// the decompression of a typical file.
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// The bytes of one zstd frame written by [`Writer::content`] (which records its size).
fn decompress(frame: &[u8]) -> std::io::Result<Vec<u8>> {
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
    let size = zstd::zstd_safe::get_frame_content_size(frame)
        .ok()
        .flatten()
        .filter(|&n| n <= MAX_CONTENT)
        .ok_or_else(|| bad("no content size in the frame header"))?;
    DECOMPRESSOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        let decompressor = match cell.as_mut() {
            Some(d) => d,
            None => cell.insert(zstd::bulk::Decompressor::new()?),
        };
        decompressor.decompress(frame, size as usize)
    })
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
    /// The footer's magic ([`MAGIC`]; the tests write [`MAGIC_PLAIN`] segments too).
    magic: &'static [u8; 8],
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
            magic: MAGIC,
        })
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), StoreError> {
        self.out.write_all(bytes).map_err(|e| io(&self.tmp, e))?;
        self.at += bytes.len() as u64;
        Ok(())
    }

    /// Adds a document whose `stored` bytes are already in the segment's form.
    fn stored(&mut self, meta: &DocMeta, stored: &[u8]) -> Result<(), StoreError> {
        self.docs.push(DocMeta {
            path: meta.path.clone(),
            hash: meta.hash.clone(),
            language: meta.language.clone(),
            offset: self.at,
            len: stored.len() as u64,
        });
        self.put(stored)
    }

    /// Adds a document, compressing its `content` (unless the segment is a plain one).
    fn content(&mut self, meta: &DocMeta, content: &[u8]) -> Result<(), StoreError> {
        if self.magic == MAGIC_PLAIN {
            return self.stored(meta, content);
        }
        let packed = zstd::bulk::compress(content, LEVEL).map_err(|e| io(&self.tmp, e))?;
        self.stored(meta, &packed)
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
        footer.extend_from_slice(self.magic);
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
    write_as(path, docs, MAGIC)
}

/// [`write`], in the form `magic` names (the tests write segments as they were before).
fn write_as(path: &Path, docs: &[NewDoc], magic: &'static [u8; 8]) -> Result<(), StoreError> {
    let mut writer = Writer::create(path)?;
    writer.magic = magic;
    let mut postings: std::collections::BTreeMap<Trigram, RoaringBitmap> = Default::default();
    for (number, doc) in docs.iter().enumerate() {
        let meta = DocMeta {
            path: doc.path.clone(),
            hash: doc.hash.clone(),
            language: doc.language.clone(),
            offset: 0,
            len: 0,
        };
        writer.content(&meta, &doc.content)?;
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
            if segment.compressed {
                writer.stored(doc, segment.stored(number as u32))?;
            } else {
                writer.content(doc, segment.stored(number as u32))?;
            }
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
        assert_eq!(
            segment.content(1).expect("content").as_ref(),
            b"struct Token;"
        );
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
        assert_eq!(merged.content(1).expect("content").as_ref(), b"gamma delta");
        assert_eq!(lookup(&merged, "gamma"), vec!["b.rs", "c.rs"]);
        assert!(
            lookup(&merged, "alpha").is_empty(),
            "a deleted document's postings go"
        );
    }

    #[test]
    fn contents_are_stored_compressed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("1.seg");
        let code = "fn validate_token(token: &str) -> bool { !token.is_empty() }\n".repeat(500);
        write(&path, &[doc("a.rs", &code)]).expect("written");
        let segment = Segment::open(&path).expect("opened");
        assert!(
            segment.bytes() < code.len() as u64 / 4,
            "{} bytes for {} of content",
            segment.bytes(),
            code.len()
        );
        assert_eq!(
            segment.content(0).expect("content").as_ref(),
            code.as_bytes()
        );
    }

    #[test]
    fn segments_written_before_compression_read_and_merge() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (old, new, out) = (
            dir.path().join("1.seg"),
            dir.path().join("2.seg"),
            dir.path().join("3.seg"),
        );
        // An uncompressed segment as written before: contents as they are, magic 01.
        let docs = [doc("a.rs", "alpha beta"), doc("b.rs", "beta gamma")];
        write_as(&old, &docs, MAGIC_PLAIN).expect("written");
        let plain = Segment::open(&old).expect("an old segment opens");
        assert!(!plain.compressed);
        assert_eq!(plain.content(1).expect("content").as_ref(), b"beta gamma");
        assert_eq!(lookup(&plain, "gamma"), vec!["b.rs"]);

        write(&new, &[doc("c.rs", "gamma delta")]).expect("written");
        let compressed = Segment::open(&new).expect("open");
        merge(
            &out,
            &[
                (&plain, &RoaringBitmap::new()),
                (&compressed, &RoaringBitmap::new()),
            ],
        )
        .expect("merged");
        let merged = Segment::open(&out).expect("open");
        assert!(merged.compressed, "a merge writes compressed contents");
        let contents: Vec<Vec<u8>> = (0..3)
            .map(|d| merged.content(d).expect("content").into_owned())
            .collect();
        assert_eq!(
            contents,
            [&b"alpha beta"[..], b"beta gamma", b"gamma delta"]
        );
        assert_eq!(lookup(&merged, "gamma"), vec!["b.rs", "c.rs"]);
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

        // A document whose compressed bytes are damaged: the segment opens, the content
        // is refused with what to do.
        write(&path, &[doc("a.rs", "fn main() {}")]).expect("written");
        let mut bytes = std::fs::read(&path).expect("read");
        bytes[0] ^= 0xff; // the zstd frame's magic number
        std::fs::write(&path, &bytes).expect("write");
        let segment = Segment::open(&path).expect("the segment's tables are whole");
        let err = segment.content(0).expect_err("refused");
        assert!(err.to_string().contains("sextant repo remove"), "{err}");
    }
}
