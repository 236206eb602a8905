//! The chunk table held in memory (pure): its vectors, as half-precision floats and as
//! 8-bit codes, with the few columns a [`ChunkFilter`] reads, scored against a question
//! by one exact scan ([`FlatVectors::search`]: the codes choose, the halves decide); a
//! BM25 index of the full-text column ([`super::bm25`]), for the text leg; and its rows,
//! as read ([`FlatBuilder::hold`]: Arrow batches without vectors or full-text column), so
//! that reads of hits and of whole files need no query.
//!
//! LanceDB answers a filtered nearest-neighbour query through its query planner, IO
//! scheduler and (from 10k rows) its IVF-PQ index re-scored with full vectors: ~20 ms
//! wall at 10k rows and 13 ms of CPU at 100k before a row is read, and every read of
//! rows costs a query of its own (docs/BENCHMARKS.md). A scan of every vector costs less
//! up to tens of thousands of rows, and is exact where the index finds ~94 % of the true
//! top 50. The chunk store keeps one [`FlatVectors`] for the table version it was read
//! at ([`FlatCache`]), reads it again in the background when the table changes (at most
//! so often: [`FlatCache::begin_load`]), and answers from LanceDB meanwhile; a table
//! whose vectors and rows exceed the cache's bytes stays on LanceDB.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use half::f16;
use half::slice::HalfFloatSliceExt;

use super::bm25::{Bm25, Bm25Builder, best_k};
use super::dot::{DotKernel, MAX_BYTE};
use super::filter::{ChunkFilter, PathMatcher};

/// One row as read from the table.
#[derive(Debug, Clone, Copy)]
pub struct FlatRow<'a> {
    /// The chunk id.
    pub id: &'a str,
    /// The repository id.
    pub repo: &'a str,
    /// The file's path in its repository.
    pub path: &'a str,
    /// The language id.
    pub language: &'a str,
    /// The node kind.
    pub kind: &'a str,
    /// The embedding (`dims` numbers).
    pub vector: &'a [f16],
    /// The full-text column (`search_text`), when read: every row's or the set has no
    /// full-text index.
    pub text: Option<&'a str>,
}

/// A file of the table: what a filter decides per file rather than per row.
#[derive(Debug)]
struct FileKey {
    repo: u32,
    path: Box<str>,
    language: u32,
}

/// Interns strings as small numbers while rows are added.
#[derive(Debug, Default)]
struct Names {
    list: Vec<Box<str>>,
    index: HashMap<Box<str>, u32>,
}

impl Names {
    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = u32::try_from(self.list.len()).unwrap_or(u32::MAX);
        self.list.push(name.into());
        self.index.insert(name.into(), i);
        i
    }
}

/// The vectors of one table version, with what filters read, in row order.
#[derive(Debug, Default)]
pub struct FlatVectors {
    version: u64,
    dims: usize,
    vectors: Vec<f16>,
    inv_norms: Vec<f32>,
    /// Each vector as `dims` 8-bit codes: its values over its scale, rounded.
    codes: Vec<i8>,
    /// Per row: what one code unit is worth in cosine (the vector's scale over its norm).
    code_scales: Vec<f32>,
    /// Per row: the sum of its codes, and of their magnitudes.
    code_sums: Vec<(i32, u32)>,
    /// Whether every vector held is finite (the codes' bound holds only then).
    finite: bool,
    ids: Vec<Box<str>>,
    files: Vec<u32>,
    kinds: Vec<u32>,
    file_keys: Vec<FileKey>,
    /// File number by repository number and path.
    file_index: HashMap<(u32, Box<str>), u32>,
    repos: Names,
    languages: Names,
    kind_names: Names,
    /// Rows ordered by repository number and chunk id, for [`FlatVectors::find`].
    by_id: Vec<u32>,
    /// The rows themselves, when held.
    rows: Option<HeldRows>,
    /// BM25 over the rows' full-text column, when every row's was read.
    text: Option<Bm25>,
}

/// Rows held as read: Arrow batches and where each row is in them.
#[derive(Debug, Default)]
struct HeldRows {
    batches: Vec<RecordBatch>,
    /// Per row: its batch and its offset in it.
    at: Vec<(u32, u32)>,
    /// Per file: its rows.
    by_file: Vec<Vec<u32>>,
    /// Whether they are every row of the table (none was waiting for its vector).
    complete: bool,
}

/// Builds a [`FlatVectors`] row by row.
#[derive(Debug)]
pub struct FlatBuilder {
    set: FlatVectors,
    /// The rows' batches while they are kept, with their bytes.
    held: Option<(HeldRows, usize)>,
    /// The full-text index while every row brought its text.
    text: Option<Bm25Builder>,
}

impl FlatBuilder {
    /// An empty set of `dims`-wide vectors read at table `version`.
    pub fn new(version: u64, dims: usize) -> Self {
        Self {
            set: FlatVectors {
                version,
                dims,
                finite: true,
                ..FlatVectors::default()
            },
            held: Some((HeldRows::default(), 0)),
            text: Some(Bm25Builder::default()),
        }
    }

    /// Bytes the vectors of `rows` more rows would add: their halves and their codes.
    pub fn vector_bytes(dims: usize, rows: usize) -> usize {
        rows.saturating_mul(dims)
            .saturating_mul(std::mem::size_of::<f16>() + std::mem::size_of::<i8>())
    }

    /// Keeps `batch` (rows as read, found through [`FlatVectors::places`]) while the
    /// vectors and the batches kept take at most `limit` bytes; past it, no batch is kept
    /// (and a set without its rows leaves searches to LanceDB). The batch's number, for
    /// [`FlatBuilder::push`].
    pub fn hold(&mut self, batch: RecordBatch, limit: usize) -> Option<u32> {
        let (held, bytes) = self.held.as_mut()?;
        // A copy into buffers of its own: a batch as read may share larger ones (LanceDB's
        // decoded pages), which memory would otherwise keep whole.
        let all = arrow_array::UInt32Array::from_iter_values(0..batch.num_rows() as u32);
        let Ok(batch) =
            arrow_select::take::take_record_batch(&batch, &all).and_then(|b| with_dictionaries(&b))
        else {
            self.held = None;
            return None;
        };
        *bytes += batch.get_array_memory_size();
        let text = self.text.as_ref().map_or(0, Bm25Builder::bytes);
        if *bytes + text + Self::vector_bytes(self.set.dims, self.set.len() + batch.num_rows())
            > limit
        {
            self.held = None;
            return None;
        }
        held.batches.push(batch);
        u32::try_from(held.batches.len() - 1).ok()
    }

    /// Adds a row, found at `offset` of batch `held` when its batch is kept; a vector of
    /// another width is refused (the table's width is fixed).
    pub fn push(&mut self, row: FlatRow<'_>, held: Option<(u32, u32)>) -> Result<(), String> {
        let set = &mut self.set;
        if row.vector.len() != set.dims {
            return Err(format!(
                "row {} has a {}-dimensional vector; the table's are {}-dimensional",
                row.id,
                row.vector.len(),
                set.dims
            ));
        }
        let repo = set.repos.intern(row.repo);
        let language = set.languages.intern(row.language);
        let file = match set.file_index.get(&(repo, row.path.into())) {
            Some(&f) => f,
            None => {
                let f = u32::try_from(set.file_keys.len()).unwrap_or(u32::MAX);
                set.file_keys.push(FileKey {
                    repo,
                    path: row.path.into(),
                    language,
                });
                set.file_index.insert((repo, row.path.into()), f);
                f
            }
        };
        let values: Vec<f32> = row.vector.iter().map(|x| x.to_f32()).collect();
        let norm = values.iter().map(|x| x * x).sum::<f32>().sqrt();
        let inv_norm = if norm > 0.0 { 1.0 / norm } else { 0.0 };
        set.inv_norms.push(inv_norm);
        set.finite &= values.iter().all(|x| x.is_finite());
        let scale = values.iter().fold(0.0f32, |m, x| m.max(x.abs())) / 127.0;
        let code = |x: &f32| {
            if scale > 0.0 {
                (x / scale).round().clamp(-127.0, 127.0) as i8
            } else {
                0
            }
        };
        let first = set.codes.len();
        set.codes.extend(values.iter().map(code));
        let codes = &set.codes[first..];
        set.code_sums.push((
            codes.iter().map(|&c| i32::from(c)).sum(),
            codes.iter().map(|&c| u32::from(c.unsigned_abs())).sum(),
        ));
        set.code_scales.push(scale * inv_norm);
        set.vectors.extend_from_slice(row.vector);
        set.ids.push(row.id.into());
        set.files.push(file);
        set.kinds.push(set.kind_names.intern(row.kind));
        match (held, self.held.as_mut()) {
            (Some(at), Some((rows, _))) => rows.at.push(at),
            (None, Some(_)) => self.held = None,
            _ => {}
        }
        match (row.text, self.text.as_mut()) {
            (Some(text), Some(index)) => index.push(text),
            (None, Some(_)) => self.text = None,
            _ => {}
        }
        Ok(())
    }

    /// Rows added so far.
    pub fn len(&self) -> usize {
        self.set.len()
    }

    /// Whether no row was added.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// The finished set; `complete` says whether its rows are every row of the table
    /// (reads of whole files are answered from it only then).
    pub fn finish(self, complete: bool) -> FlatVectors {
        let mut set = self.set;
        let key = |i: u32| {
            let repo = set.file_keys[set.files[i as usize] as usize].repo;
            (repo, &set.ids[i as usize])
        };
        let mut by_id: Vec<u32> = (0..set.ids.len() as u32).collect();
        by_id.sort_unstable_by(|&a, &b| key(a).cmp(&key(b)));
        set.by_id = by_id;
        set.rows = self.held.map(|(mut rows, _)| {
            rows.by_file = vec![Vec::new(); set.file_keys.len()];
            for (i, &f) in set.files.iter().enumerate() {
                rows.by_file[f as usize].push(i as u32);
            }
            rows.complete = complete;
            rows
        });
        set.text = self.text.map(Bm25Builder::finish);
        set
    }
}

/// `batch` with each text column that repeats its values (a file's path, hash and
/// language, a repository's id: the same for all of a file's rows) as a dictionary, each
/// value held once and each row a number, where that takes fewer bytes.
fn with_dictionaries(batch: &RecordBatch) -> Result<RecordBatch, arrow_schema::ArrowError> {
    use arrow_array::builder::StringDictionaryBuilder;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int32Type;
    use arrow_array::{Array, ArrayRef};

    let schema = batch.schema();
    let mut fields = Vec::with_capacity(batch.num_columns());
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(batch.num_columns());
    for (field, column) in schema.fields().iter().zip(batch.columns()) {
        let dictionary = column.as_string_opt::<i32>().map(|texts| {
            let mut builder = StringDictionaryBuilder::<Int32Type>::new();
            builder.extend(texts.iter());
            builder.finish()
        });
        match dictionary {
            Some(d) if d.get_array_memory_size() < column.get_array_memory_size() => {
                fields.push(field.as_ref().clone().with_data_type(d.data_type().clone()));
                columns.push(Arc::new(d));
            }
            _ => {
                fields.push(field.as_ref().clone());
                columns.push(column.clone());
            }
        }
    }
    RecordBatch::try_new(
        Arc::new(arrow_schema::Schema::new_with_metadata(
            fields,
            schema.metadata().clone(),
        )),
        columns,
    )
}

/// What a held table's bytes hold ([`FlatVectors::parts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeldParts {
    /// The vectors, their codes and norms, and each row's keys.
    pub vectors: usize,
    /// The rows themselves (0 when not held).
    pub rows: usize,
    /// The full-text index (0 when not held).
    pub text: usize,
}

/// Where a held row is: its batch and its offset in it.
pub type Place = (usize, usize);

/// A row of [`FlatVectors::search`]'s answer.
#[derive(Debug, Clone, PartialEq)]
pub struct FlatHit {
    /// The row's position in the set ([`FlatVectors::vector`], [`FlatVectors::places`]).
    pub index: usize,
    /// Cosine similarity to the question (LanceDB's `1 - cosine distance`).
    pub score: f32,
}

/// Whether each entry of `names` passes a list filter (empty: every one does).
fn admitted(names: &[Box<str>], wanted: &[String]) -> Vec<bool> {
    names
        .iter()
        .map(|n| wanted.is_empty() || wanted.iter().any(|w| w.as_str() == &**n))
        .collect()
}

impl FlatVectors {
    /// The table version the rows were read at.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether no row is held.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Bytes held (vectors, codes, norms, keys and the rows held; the interned names are
    /// left out).
    pub fn bytes(&self) -> usize {
        let parts = self.parts();
        parts.vectors + parts.rows + parts.text
    }

    /// [`FlatVectors::bytes`] by what they hold.
    pub fn parts(&self) -> HeldParts {
        HeldParts {
            vectors: FlatBuilder::vector_bytes(self.dims, self.len())
                + self.len() * (4 + 4 + 4 + 4 + 4 + 8 + std::mem::size_of::<Box<str>>())
                + self.ids.iter().map(|i| i.len()).sum::<usize>(),
            rows: self.rows.as_ref().map_or(0, |r| {
                r.batches
                    .iter()
                    .map(RecordBatch::get_array_memory_size)
                    .sum::<usize>()
                    + r.at.len() * 12
            }),
            text: self.text.as_ref().map_or(0, Bm25::bytes),
        }
    }

    /// The row of chunk `id` of repository `repo`, if the set has it.
    pub fn find(&self, repo: &str, id: &str) -> Option<usize> {
        let repo = *self.repos.index.get(repo)?;
        self.by_id
            .binary_search_by(|&i| {
                let row_repo = self.file_keys[self.files[i as usize] as usize].repo;
                (row_repo, &*self.ids[i as usize]).cmp(&(repo, id))
            })
            .ok()
            .map(|at| self.by_id[at] as usize)
    }

    /// Whether the rows themselves are held ([`FlatVectors::places`]).
    pub fn holds_rows(&self) -> bool {
        self.rows.is_some()
    }

    /// Whether the rows held are every row of the table (none waits for its vector).
    pub fn holds_every_row(&self) -> bool {
        self.rows.as_ref().is_some_and(|r| r.complete)
    }

    /// The rows of one file, in table order, when every row is held (`Some(empty)` for a
    /// file the table does not have).
    pub fn file_rows(&self, repo: &str, path: &str) -> Option<&[u32]> {
        let rows = self.rows.as_ref().filter(|r| r.complete)?;
        let file = self
            .repos
            .index
            .get(repo)
            .and_then(|&r| self.file_index.get(&(r, path.into())));
        Some(file.map_or(&[][..], |&f| &rows.by_file[f as usize]))
    }

    /// The held batches, and where rows `indices` are in them, in that order; `None` when
    /// the rows are not held or an index is out of range.
    pub fn places(&self, indices: &[usize]) -> Option<(&[RecordBatch], Vec<Place>)> {
        let rows = self.rows.as_ref()?;
        let places = indices
            .iter()
            .map(|&i| rows.at.get(i).map(|&(b, o)| (b as usize, o as usize)))
            .collect::<Option<Vec<_>>>()?;
        Some((&rows.batches, places))
    }

    /// Row `index`'s vector as `f32`s (empty for an index out of range).
    pub fn vector(&self, index: usize) -> Vec<f32> {
        let Some(halves) = self.vectors.get(index * self.dims..(index + 1) * self.dims) else {
            return Vec::new();
        };
        let mut out = vec![0.0; self.dims];
        halves.convert_to_f32_slice(&mut out);
        out
    }

    /// Which rows `filter` admits, decided once per file and per kind.
    fn admitted_rows(&self, filter: &ChunkFilter, paths: &PathMatcher) -> Vec<bool> {
        let mut repos = admitted(&self.repos.list, &filter.repositories);
        for (ok, repo) in repos.iter_mut().zip(&self.repos.list) {
            *ok &= !filter.excluded.iter().any(|e| e.as_str() == &**repo);
        }
        let mut languages = admitted(&self.languages.list, &filter.languages);
        if !filter.categories.is_empty() {
            let of_categories = filter.category_languages();
            for (ok, language) in languages.iter_mut().zip(&self.languages.list) {
                *ok &= of_categories.iter().any(|l| l.as_str() == &**language);
            }
        }
        let kinds = admitted(&self.kind_names.list, &filter.kinds);
        let files: Vec<bool> = self
            .file_keys
            .iter()
            .map(|f| {
                let repo = &self.repos.list[f.repo as usize];
                repos[f.repo as usize]
                    && languages[f.language as usize]
                    && paths.is_match(&f.path)
                    && filter.admits_file(repo, &f.path)
            })
            .collect();
        self.files
            .iter()
            .zip(&self.kinds)
            .map(|(&f, &k)| files[f as usize] && kinds[k as usize])
            .collect()
    }

    /// The `k` rows most similar to `query` (cosine) among those `filter` admits (its
    /// paths checked by `paths`, compiled from it), best first; ties in row order.
    /// Nothing for a query of another width or of length zero.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        filter: &ChunkFilter,
        paths: &PathMatcher,
    ) -> Vec<FlatHit> {
        let norm = query.iter().map(|x| x * x).sum::<f32>().sqrt();
        if query.len() != self.dims || norm == 0.0 || k == 0 || !norm.is_finite() {
            return Vec::new();
        }
        let query: Vec<f32> = query.iter().map(|x| x / norm).collect();
        let admitted = self.admitted_rows(filter, paths);
        // The rows in parts of at least SCAN_PART_ROWS, one thread each (up to the
        // machine's cores), each part's best k merged.
        let parts = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(self.len() / SCAN_PART_ROWS)
            .max(1);
        self.hits(self.scan(&query, &admitted, k, parts))
    }

    /// Scored rows as hits.
    fn hits(&self, scored: Vec<(f32, usize)>) -> Vec<FlatHit> {
        scored
            .into_iter()
            .map(|(score, index)| FlatHit { index, score })
            .collect()
    }

    /// The `k` admitted rows most similar to `query` (of unit length), best first, the
    /// rows scanned in `parts` parts on as many threads.
    ///
    /// The codes choose: each row's cosine from its codes and the question's bytes
    /// ([`QuestionBytes`]), raised by the most rounding on either side can hide, keeps
    /// the [`pool_size`] rows of highest upper bound. The
    /// halves decide: those rows scored exactly, the best `k` are the answer when the
    /// k-th is above every upper bound left out; otherwise (near ties, a rare wide row)
    /// every row is scored exactly. Either way the answer is the exact scan's.
    fn scan(&self, query: &[f32], admitted: &[bool], k: usize, parts: usize) -> Vec<(f32, usize)> {
        if self.finite {
            if let Some(best) = self.coded_scan(query, admitted, k, parts) {
                return best;
            }
            tracing::debug!(
                k,
                "vector scan: the codes left the answer open; every row scored"
            );
        }
        self.exact_scan(query, admitted, k, parts)
    }

    /// [`FlatVectors::scan`] by codes then halves; `None` where the codes leave the answer
    /// open.
    fn coded_scan(
        &self,
        query: &[f32],
        admitted: &[bool],
        k: usize,
        parts: usize,
    ) -> Option<Vec<(f32, usize)>> {
        let kernel = DotKernel::detect();
        let size = pool_size(k);
        let question = QuestionBytes::of(query)?;
        let mut pool = Pool::new(size);
        for part in self.in_parts(parts, |from, to| {
            let mut pool = Pool::new(size);
            let codes = self.codes.chunks_exact(self.dims).enumerate();
            for (index, codes) in codes.take(to).skip(from) {
                if admitted[index] {
                    let dot = kernel.dot_bytes(&question.bytes, codes);
                    let upper =
                        question.upper(dot, self.code_sums[index]) * self.code_scales[index];
                    pool.offer(upper, index);
                }
            }
            pool
        }) {
            pool.merge(part);
        }
        let (candidates, left_out) = pool.finish();
        let mut scratch = vec![0.0f32; self.dims];
        let exact: Vec<(f32, usize)> = candidates
            .into_iter()
            .map(|(_, index)| (self.exact(kernel, query, index, &mut scratch), index))
            .collect();
        let best = best_k(exact, k);
        let kth = best
            .get(k.saturating_sub(1))
            .map_or(f32::NEG_INFINITY, |b| b.0);
        (left_out == f32::NEG_INFINITY || left_out + CODE_SLACK < kth).then_some(best)
    }

    /// Row `index`'s cosine with `query` (of unit length) from its halves.
    fn exact(&self, kernel: DotKernel, query: &[f32], index: usize, scratch: &mut [f32]) -> f32 {
        let halves = &self.vectors[index * self.dims..(index + 1) * self.dims];
        kernel.dot(query, halves, scratch) * self.inv_norms[index]
    }

    /// [`FlatVectors::scan`] from the halves of every admitted row.
    fn exact_scan(
        &self,
        query: &[f32],
        admitted: &[bool],
        k: usize,
        parts: usize,
    ) -> Vec<(f32, usize)> {
        let kernel = DotKernel::detect();
        let found = self.in_parts(parts, |from, to| {
            let mut scratch = vec![0.0f32; self.dims];
            let scored: Vec<(f32, usize)> = (from..to)
                .filter(|&index| admitted[index])
                .map(|index| (self.exact(kernel, query, index, &mut scratch), index))
                .collect();
            best_k(scored, k)
        });
        best_k(found.into_iter().flatten().collect(), k)
    }

    /// `scan(from, to)` over the rows in `parts` ranges, one thread each (none for one).
    fn in_parts<T: Send>(&self, parts: usize, scan: impl Fn(usize, usize) -> T + Sync) -> Vec<T> {
        let rows = self.len();
        let part_rows = rows.div_ceil(parts.max(1)).max(1);
        if parts <= 1 {
            return vec![scan(0, rows)];
        }
        let scan = &scan;
        std::thread::scope(|threads| {
            // The first part on this thread, the others on threads of their own.
            let others: Vec<_> = (part_rows..rows)
                .step_by(part_rows)
                .map(|from| threads.spawn(move || scan(from, (from + part_rows).min(rows))))
                .collect();
            let mut found = vec![scan(0, part_rows.min(rows))];
            // A part that panicked is a bug: its panic goes on, not a short answer.
            found.extend(
                others
                    .into_iter()
                    .map(|t| t.join().unwrap_or_else(|e| std::panic::resume_unwind(e))),
            );
            found
        })
    }

    /// Whether the set answers full-text searches ([`FlatVectors::text_search`]): every
    /// row of the table is held with its text.
    pub fn holds_text(&self) -> bool {
        self.text.is_some() && self.holds_every_row()
    }

    /// The `k` rows best matching `query` by BM25 (see [`super::bm25`]) among those
    /// `filter` admits, best first; nothing when the set holds no text.
    pub fn text_search(
        &self,
        query: &str,
        k: usize,
        filter: &ChunkFilter,
        paths: &PathMatcher,
    ) -> Vec<FlatHit> {
        let Some(text) = &self.text else {
            return Vec::new();
        };
        let admitted = self.admitted_rows(filter, paths);
        self.hits(text.search(query, k, &admitted))
    }
}

/// Rows a thread of the vector scan takes at the least: below it a thread costs more
/// than it saves.
const SCAN_PART_ROWS: usize = 8_192;

/// Room for the rounding of single-precision sums between a cosine from codes and one from
/// halves (both are sums of a few hundred products of numbers below one).
const CODE_SLACK: f32 = 1e-4;

/// A question as bytes for [`DotKernel::dot_bytes`]: each value as a whole number of
/// steps within ±[`QUESTION_STEPS`] (a step is its largest value over that), plus
/// `QUESTION_STEPS + 1`, so that every byte is at most [`MAX_BYTE`].
struct QuestionBytes {
    bytes: Vec<u8>,
    step: f32,
    /// Half the question's L1 norm.
    half_l1: f32,
}

/// Steps of a question's largest value (see [`QuestionBytes`]).
const QUESTION_STEPS: f32 = 63.0;
const _: () = assert!(2.0 * QUESTION_STEPS + 1.0 <= MAX_BYTE as f32);

impl QuestionBytes {
    /// `None` for a question of zeros (or not finite).
    fn of(query: &[f32]) -> Option<Self> {
        let top = query.iter().fold(0.0f32, |m, x| m.max(x.abs()));
        if !(top > 0.0 && top.is_finite()) {
            return None;
        }
        let step = top / QUESTION_STEPS;
        let bytes = query
            .iter()
            .map(|x| {
                ((x / step).round().clamp(-QUESTION_STEPS, QUESTION_STEPS) + QUESTION_STEPS + 1.0)
                    as u8
            })
            .collect();
        let half_l1 = query.iter().map(|x| x.abs()).sum::<f32>() / 2.0;
        Some(Self {
            bytes,
            step,
            half_l1,
        })
    }

    /// The most `question · row` can be, in code units of the row, from `dot` (the bytes
    /// with the row's codes) and the row's code sum and code magnitudes: the question's
    /// steps times the codes, plus what rounding either side can hide (no code is more
    /// than half a unit from its value, no step more than half a step).
    fn upper(&self, dot: i32, (sum, magnitudes): (i32, u32)) -> f32 {
        let offset = QUESTION_STEPS as i32 + 1;
        let steps = dot - offset * sum;
        self.step * steps as f32 + self.half_l1 + self.step / 2.0 * magnitudes as f32
    }
}

/// Rows the codes choose for exact scoring when `k` are asked for: enough that the k-th
/// exact score is almost always above every bound left out.
fn pool_size(k: usize) -> usize {
    k.saturating_mul(8).max(256)
}

/// The `size` highest scores offered (ties: the lower row first), by pruning a buffer of
/// twice as many, and the highest score dropped (`-inf` while none was).
struct Pool {
    size: usize,
    kept: Vec<(f32, usize)>,
    dropped: f32,
}

impl Pool {
    fn new(size: usize) -> Self {
        Self {
            size,
            kept: Vec::with_capacity(2 * size),
            dropped: f32::NEG_INFINITY,
        }
    }

    fn offer(&mut self, score: f32, index: usize) {
        if score > self.dropped {
            self.kept.push((score, index));
            if self.kept.len() >= 2 * self.size {
                self.prune();
            }
        }
    }

    /// Keeps the best `size`, remembering the best of the rest.
    fn prune(&mut self) {
        if self.kept.len() > self.size {
            let best_first =
                |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
            self.kept.select_nth_unstable_by(self.size, best_first);
            self.dropped = self.dropped.max(self.kept[self.size].0);
            self.kept.truncate(self.size);
        }
    }

    /// Takes in another pool's rows and what it dropped.
    fn merge(&mut self, other: Pool) {
        self.dropped = self.dropped.max(other.dropped);
        for (score, index) in other.kept {
            self.offer(score, index);
        }
    }

    /// The rows kept (in no order) and the highest score dropped.
    fn finish(mut self) -> (Vec<(f32, usize)>, f32) {
        self.prune();
        (self.kept, self.dropped)
    }
}

/// Least time between two loads of a table's vectors.
const MIN_RELOAD_INTERVAL: Duration = Duration::from_secs(5);

/// How many times a load's own duration passes before the next may start: while a
/// table changes (a sync), loading again costs at most a tenth of one core.
const RELOAD_BACKOFF: u32 = 10;

#[derive(Debug, Default)]
struct CacheState {
    current: Option<Arc<FlatVectors>>,
    loading: bool,
    next_load: Option<Instant>,
    /// Whether a table too large to hold was reported (once a process).
    told_too_large: bool,
}

/// A chunk store's [`FlatVectors`], kept for one table version at a time.
#[derive(Debug)]
pub struct FlatCache {
    limit_bytes: usize,
    state: Mutex<CacheState>,
}

impl FlatCache {
    /// A cache that holds at most `limit_bytes` of vectors and rows (0: none; the store
    /// then always searches through LanceDB).
    pub fn new(limit_bytes: usize) -> Self {
        Self {
            limit_bytes,
            state: Mutex::new(CacheState::default()),
        }
    }

    /// Most bytes of vectors and rows it holds.
    pub fn limit_bytes(&self) -> usize {
        self.limit_bytes
    }

    fn state(&self) -> std::sync::MutexGuard<'_, CacheState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Bytes of the table held now, whatever its version (0 when none is).
    pub fn held_bytes(&self) -> usize {
        self.state().current.as_ref().map_or(0, |v| v.bytes())
    }

    /// The vectors of table `version`, when those are the ones held.
    pub fn at(&self, version: u64) -> Option<Arc<FlatVectors>> {
        self.state()
            .current
            .as_ref()
            .filter(|v| v.version() == version)
            .cloned()
    }

    /// Whether a load should start now; when it should, the cache counts it as started
    /// (and lets go of vectors that are no longer the table's). False while another
    /// load runs, before the back-off since the last one has passed, or when the cache
    /// is off.
    pub fn begin_load(&self, now: Instant) -> bool {
        if self.limit_bytes == 0 {
            return false;
        }
        let mut state = self.state();
        if state.loading || state.next_load.is_some_and(|at| now < at) {
            return false;
        }
        state.loading = true;
        state.current = None;
        true
    }

    /// Ends a load begun at `started`: keeps `loaded` (`None`: nothing to keep, the
    /// table being too large or the read having failed) and sets when the next may begin.
    pub fn end_load(&self, loaded: Option<FlatVectors>, started: Instant, now: Instant) {
        let took = now.saturating_duration_since(started);
        let mut state = self.state();
        state.loading = false;
        state.next_load = Some(now + (took * RELOAD_BACKOFF).max(MIN_RELOAD_INTERVAL));
        state.current = loaded.map(Arc::new);
    }

    /// Lets the next [`FlatCache::begin_load`] start at once (a load asked for outright).
    pub fn allow_load_now(&self) {
        self.state().next_load = None;
    }

    /// Whether a table found too large to hold should be reported now: the first time
    /// only, so that a server searching a large repository says it once.
    pub fn first_too_large(&self) -> bool {
        !std::mem::replace(&mut self.state().told_too_large, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::filter::RefView;

    fn halves(v: &[f32]) -> Vec<f16> {
        v.iter().map(|x| f16::from_f32(*x)).collect()
    }

    struct Row {
        repo: &'static str,
        path: &'static str,
        language: &'static str,
        kind: &'static str,
        vector: Vec<f32>,
    }

    fn rows() -> Vec<Row> {
        let mut out = Vec::new();
        let files = [
            ("r1", "src/a.ts", "typescript"),
            ("r1", "src/b.py", "python"),
            ("r1", "docs/x.md", "markdown"),
            ("r2", "src/a.ts", "typescript"),
            ("r2", "lib/c.go", "go"),
        ];
        for (i, (repo, path, language)) in files.into_iter().enumerate() {
            for j in 0..7 {
                let kind = if j % 2 == 0 { "function" } else { "class" };
                // Spread over many directions, some of other lengths, one zero.
                let vector: Vec<f32> = (0..12)
                    .map(|d| {
                        if i == 4 && j == 6 {
                            0.0
                        } else {
                            (((i * 7 + j) * 13 + d * 5) % 17) as f32 - 8.0 + 0.25 * j as f32
                        }
                    })
                    .collect();
                out.push(Row {
                    repo,
                    path,
                    language,
                    kind,
                    vector,
                });
            }
        }
        out
    }

    fn build(rows: &[Row]) -> FlatVectors {
        let mut b = FlatBuilder::new(3, 12);
        for (i, r) in rows.iter().enumerate() {
            let id = format!("c{i}");
            let text = format!("{} {}", r.path, r.kind);
            b.push(
                FlatRow {
                    id: &id,
                    repo: r.repo,
                    path: r.path,
                    language: r.language,
                    kind: r.kind,
                    vector: &halves(&r.vector),
                    text: Some(&text),
                },
                None,
            )
            .unwrap();
        }
        b.finish(false)
    }

    /// The answer worked out the slow way: every admitted row's cosine, sorted.
    fn reference(rows: &[Row], query: &[f32], k: usize, filter: &ChunkFilter) -> Vec<usize> {
        let paths = filter.path_matcher().unwrap();
        let categories = filter.category_languages();
        let cos = |v: &[f32]| {
            let v: Vec<f32> = halves(v).iter().map(|h| h.to_f32()).collect();
            let n = |x: &[f32]| x.iter().map(|a| (a * a) as f64).sum::<f64>().sqrt();
            let d: f64 = query.iter().zip(&v).map(|(a, b)| (a * b) as f64).sum();
            if n(&v) == 0.0 {
                0.0
            } else {
                d / n(query) / n(&v)
            }
        };
        let mut all: Vec<(f64, usize)> = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                (filter.repositories.is_empty() || filter.repositories.iter().any(|x| x == r.repo))
                    && !filter.excluded.iter().any(|x| x == r.repo)
                    && (filter.languages.is_empty()
                        || filter.languages.iter().any(|x| x == r.language))
                    && (filter.categories.is_empty() || categories.iter().any(|x| x == r.language))
                    && (filter.kinds.is_empty() || filter.kinds.iter().any(|x| x == r.kind))
                    && paths.is_match(r.path)
                    && filter.admits_file(r.repo, r.path)
            })
            .map(|(i, r)| (cos(&r.vector), i))
            .collect();
        all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        all.into_iter().take(k).map(|(_, i)| i).collect()
    }

    fn search(flat: &FlatVectors, query: &[f32], k: usize, filter: &ChunkFilter) -> Vec<usize> {
        let paths = filter.path_matcher().unwrap();
        flat.search(query, k, filter, &paths)
            .into_iter()
            .map(|h| h.index)
            .collect()
    }

    /// The default filter with one change.
    fn with(change: impl FnOnce(&mut ChunkFilter)) -> ChunkFilter {
        let mut filter = ChunkFilter::default();
        change(&mut filter);
        filter
    }

    fn filters() -> Vec<ChunkFilter> {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        vec![
            ChunkFilter::default(),
            with(|f| f.repositories = strings(&["r2"])),
            with(|f| f.excluded = strings(&["r1"])),
            with(|f| f.paths = strings(&["src/"])),
            with(|f| f.paths = strings(&["**/*.ts", "lib"])),
            with(|f| {
                f.languages = strings(&["python", "go"]);
                f.kinds = strings(&["class"]);
            }),
            with(|f| f.categories = strings(&["code"])),
            with(|f| f.categories = strings(&["docs"])),
            with(|f| {
                f.views = vec![RefView {
                    repository: "r1".into(),
                    tracked: "r1-ref".into(),
                    hidden: ["src/a.ts".to_string()].into(),
                }]
            }),
            with(|f| f.repositories = strings(&["nowhere"])),
        ]
    }

    #[test]
    fn the_scan_finds_the_exact_nearest_rows_under_every_filter() {
        let rows = rows();
        let flat = build(&rows);
        assert_eq!(flat.len(), 35);
        for q in 0..6 {
            let query: Vec<f32> = (0..12)
                .map(|d| ((q * 11 + d * 3) % 13) as f32 - 6.0)
                .collect();
            for filter in filters() {
                for k in [1, 5, 50] {
                    assert_eq!(
                        search(&flat, &query, k, &filter),
                        reference(&rows, &query, k, &filter),
                        "query {q}, k {k}, filter {filter:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_scan_in_parts_finds_what_one_scan_finds() {
        let rows = rows();
        let flat = build(&rows);
        let paths = ChunkFilter::default().path_matcher().unwrap();
        for q in 0..6 {
            let query: Vec<f32> = (0..12)
                .map(|d| ((q * 7 + d * 5) % 11) as f32 - 5.0)
                .collect();
            let norm = query.iter().map(|x| x * x).sum::<f32>().sqrt();
            let query: Vec<f32> = query.iter().map(|x| x / norm).collect();
            for filter in filters() {
                let admitted = flat.admitted_rows(&filter, &paths);
                for k in [1, 5, 50] {
                    let one = flat.scan(&query, &admitted, k, 1);
                    for parts in [2, 3, 35, 80] {
                        assert_eq!(flat.scan(&query, &admitted, k, parts), one, "{parts} parts");
                    }
                }
            }
        }
    }

    /// A set of `vectors` (all of one width) in one file, for the scan's own tests.
    fn of_vectors(vectors: &[Vec<f32>]) -> FlatVectors {
        let mut b = FlatBuilder::new(1, vectors[0].len());
        for (i, v) in vectors.iter().enumerate() {
            let id = format!("c{i}");
            let row = FlatRow {
                id: &id,
                repo: "r",
                path: "a.rs",
                language: "rust",
                kind: "function",
                vector: &halves(v),
                text: None,
            };
            b.push(row, None).unwrap();
        }
        b.finish(false)
    }

    // `n` deterministic values in [-1, 1), as the kernels' tests make them.
    use super::super::dot::tests::values as noise;

    fn unit(v: Vec<f32>) -> Vec<f32> {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / norm).collect()
    }

    #[test]
    fn the_codes_choose_and_the_halves_decide_as_an_exact_scan_would() {
        // 3,000 rows of 40 numbers, one with a wide outlier, some of other lengths: the
        // pool (256 rows or more) is pruned many times over.
        let vectors: Vec<Vec<f32>> = (0..3_000u32)
            .map(|i| {
                let mut v = noise(40, i);
                v[i as usize % 40] *= if i % 97 == 0 { 40.0 } else { 1.0 };
                v.iter().map(|x| x * (1 + i % 3) as f32).collect()
            })
            .collect();
        let flat = of_vectors(&vectors);
        let all = vec![true; flat.len()];
        let some: Vec<bool> = (0..flat.len()).map(|i| i % 3 != 1).collect();
        for q in 0..8 {
            let query = unit(noise(40, 10_000 + q));
            for admitted in [&all, &some] {
                for k in [1, 10, 50, 400] {
                    let exact = flat.exact_scan(&query, admitted, k, 1);
                    assert_eq!(exact.len(), k);
                    for parts in [1, 3] {
                        let coded = flat.coded_scan(&query, admitted, k, parts);
                        assert_eq!(
                            coded.as_ref(),
                            Some(&exact),
                            "query {q}, k {k}, {parts} parts"
                        );
                        assert_eq!(flat.scan(&query, admitted, k, parts), exact);
                    }
                }
            }
        }
    }

    #[test]
    fn a_rows_bound_from_codes_is_never_below_its_exact_cosine() {
        let vectors: Vec<Vec<f32>> = (0..2_000u32)
            .map(|i| {
                let mut v = noise(48, i);
                v[i as usize % 48] *= if i % 7 == 0 { 60.0 } else { 1.0 };
                v
            })
            .collect();
        let flat = of_vectors(&vectors);
        let kernel = DotKernel::detect();
        let mut scratch = vec![0.0f32; 48];
        for q in 0..20 {
            let mut query = noise(48, 50_000 + q);
            query[q as usize] *= if q % 2 == 0 { 30.0 } else { 1.0 };
            let query = unit(query);
            let question = QuestionBytes::of(&query).unwrap();
            let mut tightest = f32::INFINITY;
            for (index, codes) in flat.codes.chunks_exact(48).enumerate() {
                let dot = kernel.dot_bytes(&question.bytes, codes);
                let upper = question.upper(dot, flat.code_sums[index]) * flat.code_scales[index];
                let exact = flat.exact(kernel, &query, index, &mut scratch);
                assert!(
                    upper + CODE_SLACK >= exact,
                    "row {index}, question {q}: {upper} < {exact}"
                );
                tightest = tightest.min(upper - exact);
            }
            assert!(tightest < 0.05, "a bound that tells rows apart: {tightest}");
        }
    }

    #[test]
    fn rows_the_codes_cannot_tell_apart_are_scored_exactly() {
        // 600 rows alike: the pool cannot hold them all and none is surely left out, so
        // every row is scored from its halves; ties go to the lower row.
        let one = noise(32, 5);
        let flat = of_vectors(&vec![one.clone(); 600]);
        let all = vec![true; flat.len()];
        let query = unit(noise(32, 6));
        assert_eq!(flat.coded_scan(&query, &all, 10, 2), None);
        let found: Vec<usize> = flat.scan(&query, &all, 10, 2).iter().map(|h| h.1).collect();
        assert_eq!(found, (0..10).collect::<Vec<_>>());
        // A set with a vector that is not finite is scored from its halves alone.
        let mut odd = vec![one; 300];
        odd[7][3] = f32::NAN;
        let flat = of_vectors(&odd);
        assert!(!flat.finite);
        let all = vec![true; flat.len()];
        let rows = |found: Vec<(f32, usize)>| found.into_iter().map(|h| h.1).collect::<Vec<_>>();
        assert_eq!(
            rows(flat.scan(&query, &all, 5, 1)),
            [7, 0, 1, 2, 3],
            "NaN first, as before"
        );
    }

    #[test]
    fn text_search_finds_the_rows_with_the_words_under_every_filter() {
        let rows = rows();
        let flat = build(&rows);
        assert!(flat.text.is_some(), "every row brought its text");
        for filter in filters() {
            let paths = filter.path_matcher().unwrap();
            let found: Vec<usize> = flat
                .text_search("function", 100, &filter, &paths)
                .into_iter()
                .map(|h| h.index)
                .collect();
            let mut expected: Vec<usize> = (0..rows.len())
                .filter(|&i| rows[i].kind == "function")
                .filter(|&i| flat.admitted_rows(&filter, &paths)[i])
                .collect();
            let mut sorted = found.clone();
            sorted.sort_unstable();
            expected.sort_unstable();
            assert_eq!(sorted, expected, "{filter:?}");
        }
        // Without a text for every row, there is no full-text index.
        let mut b = FlatBuilder::new(1, 12);
        for (i, text) in [Some("a b"), None].into_iter().enumerate() {
            let id = format!("c{i}");
            b.push(
                FlatRow {
                    id: &id,
                    repo: "r",
                    path: "a.go",
                    language: "go",
                    kind: "function",
                    vector: &halves(&[1.0; 12]),
                    text,
                },
                None,
            )
            .unwrap();
        }
        let flat = b.finish(true);
        assert!(flat.text.is_none());
        let paths = ChunkFilter::default().path_matcher().unwrap();
        assert!(
            flat.text_search("a", 5, &ChunkFilter::default(), &paths)
                .is_empty()
        );
    }

    #[test]
    fn rows_are_found_by_repository_and_chunk_id() {
        let rows = rows();
        let flat = build(&rows);
        for (i, r) in rows.iter().enumerate() {
            assert_eq!(flat.find(r.repo, &format!("c{i}")), Some(i));
        }
        let other = rows
            .iter()
            .position(|r| r.repo != rows[0].repo)
            .expect("two repositories");
        assert_eq!(
            flat.find(rows[other].repo, "c0"),
            None,
            "c0 is another repository's"
        );
        assert_eq!(flat.find("nowhere", "c0"), None);
        assert_eq!(flat.find(rows[0].repo, "c999"), None);
    }

    #[test]
    fn scores_are_cosines_and_rows_keep_their_keys_and_vectors() {
        let rows = rows();
        let flat = build(&rows);
        let query = rows[3].vector.clone();
        let paths = PathMatcher::default();
        let filter = ChunkFilter::default();
        let hits = flat.search(&query, 3, &filter, &filter.path_matcher().unwrap());
        assert_eq!(hits[0].index, 3, "a row is nearest to itself");
        assert!((hits[0].score - 1.0).abs() < 1e-3, "{}", hits[0].score);
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
        let back = flat.vector(3);
        assert!(
            back.iter()
                .zip(&rows[3].vector)
                .all(|(a, b)| (a - b).abs() < 1e-2)
        );
        assert!(flat.vector(99).is_empty());
        // A zero row scores 0 rather than NaN; a zero or misshapen question finds nothing.
        assert!(
            flat.search(&query, 35, &filter, &paths)
                .iter()
                .all(|h| h.score.is_finite())
        );
        assert!(flat.search(&[0.0; 12], 5, &filter, &paths).is_empty());
        assert!(flat.search(&[1.0; 11], 5, &filter, &paths).is_empty());
        assert!(flat.search(&query, 0, &filter, &paths).is_empty());
    }

    #[test]
    fn a_row_of_another_width_is_refused() {
        let mut b = FlatBuilder::new(1, 4);
        let err = b
            .push(
                FlatRow {
                    id: "x",
                    repo: "r",
                    path: "a",
                    language: "go",
                    kind: "function",
                    vector: &halves(&[1.0, 2.0]),
                    text: None,
                },
                None,
            )
            .unwrap_err();
        assert!(
            err.contains("2-dimensional") && err.contains("4-dimensional"),
            "{err}"
        );
        assert!(b.is_empty());
    }

    /// A batch of `n` rows with an `id` column (`c{first}`…) and a number column.
    fn batch(first: usize, n: usize) -> RecordBatch {
        use arrow_array::{ArrayRef, StringArray, UInt32Array};
        let ids: Vec<String> = (first..first + n).map(|i| format!("c{i}")).collect();
        let numbers: Vec<u32> = (first..first + n).map(|i| i as u32).collect();
        RecordBatch::try_from_iter([
            ("id", Arc::new(StringArray::from(ids)) as ArrayRef),
            ("n", Arc::new(UInt32Array::from(numbers)) as ArrayRef),
        ])
        .unwrap()
    }

    #[test]
    fn repeated_texts_are_held_once_as_dictionaries() {
        use arrow_array::cast::AsArray;
        use arrow_array::types::Int32Type;
        use arrow_array::{Array, ArrayRef, StringArray};
        use arrow_schema::DataType;
        // 600 rows of three files: the path repeats, the id does not, a note is mostly null.
        let ids: Vec<String> = (0..600).map(|i| format!("chunk-{i:04}")).collect();
        let paths: Vec<String> = (0..600)
            .map(|i| format!("src/some/long/directory/file-{}.ts", i / 200))
            .collect();
        let notes: Vec<Option<&str>> = (0..600).map(|i| (i == 7).then_some("x")).collect();
        let batch = RecordBatch::try_from_iter([
            ("id", Arc::new(StringArray::from(ids.clone())) as ArrayRef),
            (
                "path",
                Arc::new(StringArray::from(paths.clone())) as ArrayRef,
            ),
            (
                "note",
                Arc::new(StringArray::from(notes.clone())) as ArrayRef,
            ),
        ])
        .unwrap();
        let plain = batch.get_array_memory_size();
        let mut b = FlatBuilder::new(1, 4);
        assert_eq!(b.hold(batch, 1 << 20), Some(0));
        let (held, _) = b.held.as_ref().unwrap();
        let held = &held.batches[0];
        assert!(held.get_array_memory_size() < plain * 3 / 4, "{plain}");
        assert_eq!(held.column(0).data_type(), &DataType::Utf8, "unique: kept");
        assert!(matches!(
            held.column(1).data_type(),
            DataType::Dictionary(..)
        ));
        let path = held.column(1).as_dictionary::<Int32Type>();
        assert_eq!(path.values().len(), 3, "each path held once");
        let values = path.values().as_string::<i32>();
        for (i, expected) in paths.iter().enumerate() {
            assert_eq!(values.value(path.keys().value(i) as usize), expected);
        }
        let note = held.column(2);
        assert_eq!(note.null_count(), 599, "nulls stay null");
    }

    /// The ids of the rows held at `indices`, read where they lie.
    fn ids_at(flat: &FlatVectors, indices: &[usize]) -> Option<Vec<String>> {
        use arrow_array::cast::AsArray;
        let (batches, places) = flat.places(indices)?;
        let ids = places.into_iter().map(|(b, o)| {
            let column = batches[b].column_by_name("id").unwrap();
            column.as_string::<i32>().value(o).to_string()
        });
        Some(ids.collect())
    }

    /// Rows 0–5 over two batches: files a.ts (0, 1, 4) and b.ts (2, 3, 5) of r1.
    fn with_rows(limit: usize) -> FlatVectors {
        let mut b = FlatBuilder::new(9, 4);
        let first = b.hold(batch(0, 4), limit);
        let second = b.hold(batch(4, 2), limit);
        for i in 0..6usize {
            let (held, offset) = if i < 4 { (first, i) } else { (second, i - 4) };
            let id = format!("c{i}");
            b.push(
                FlatRow {
                    id: &id,
                    repo: "r1",
                    path: if matches!(i, 0 | 1 | 4) {
                        "a.ts"
                    } else {
                        "b.ts"
                    },
                    language: "typescript",
                    kind: "function",
                    vector: &halves(&[1.0, i as f32, 0.0, 1.0]),
                    text: None,
                },
                held.map(|h| (h, offset as u32)),
            )
            .unwrap();
        }
        b.finish(true)
    }

    #[test]
    fn rows_held_come_back_in_the_order_asked_and_by_file() {
        let flat = with_rows(1 << 20);
        assert!(flat.holds_rows() && flat.holds_every_row());
        assert_eq!(ids_at(&flat, &[5, 0, 3]).unwrap(), ["c5", "c0", "c3"]);
        assert!(flat.places(&[6]).is_none(), "no such row");
        assert_eq!(flat.find("r1", "c4"), Some(4));
        assert_eq!(flat.find("r1", "c7"), None);
        assert_eq!(flat.find("r9", "c4"), None);
        assert_eq!(flat.file_rows("r1", "a.ts"), Some(&[0, 1, 4][..]));
        assert_eq!(flat.file_rows("r1", "b.ts"), Some(&[2, 3, 5][..]));
        assert_eq!(
            flat.file_rows("r1", "c.ts"),
            Some(&[][..]),
            "not in the table"
        );
        assert_eq!(flat.file_rows("r9", "a.ts"), Some(&[][..]));
        assert!(flat.bytes() > FlatBuilder::vector_bytes(4, 6) + 6 * 12);
    }

    #[test]
    fn rows_past_the_limit_are_not_held() {
        // Room for the vectors (48 bytes) but not for the first batch.
        let flat = with_rows(100);
        assert!(!flat.holds_rows() && !flat.holds_every_row());
        assert!(flat.places(&[0]).is_none());
        assert_eq!(flat.file_rows("r1", "a.ts"), None);
        assert_eq!(flat.find("r1", "c2"), Some(2), "ids are kept");
        assert_eq!(flat.len(), 6);
        // Held, but not every row of the table: whole files are not answered from it.
        let mut b = FlatBuilder::new(1, 4);
        let held = b.hold(batch(0, 1), 1 << 20);
        b.push(
            FlatRow {
                id: "c0",
                repo: "r1",
                path: "a.ts",
                language: "typescript",
                kind: "function",
                vector: &halves(&[1.0; 4]),
                text: None,
            },
            held.map(|h| (h, 0)),
        )
        .unwrap();
        let partial = b.finish(false);
        assert!(partial.holds_rows() && !partial.holds_every_row());
        assert_eq!(partial.file_rows("r1", "a.ts"), None);
    }

    #[test]
    fn the_cache_serves_one_version_and_loads_again_after_a_back_off() {
        let cache = FlatCache::new(1 << 20);
        let t0 = Instant::now();
        assert!(cache.at(3).is_none());
        assert!(cache.begin_load(t0));
        assert!(!cache.begin_load(t0), "one load at a time");
        let took = Duration::from_secs(2);
        cache.end_load(Some(build(&rows())), t0, t0 + took);
        assert_eq!(cache.at(3).map(|v| v.len()), Some(35));
        assert!(cache.at(4).is_none(), "another version is not served");
        // The next load waits ten times the last one's duration (20 s here).
        assert!(!cache.begin_load(t0 + took + Duration::from_secs(19)));
        assert!(cache.at(3).is_some(), "a refused load keeps what is held");
        assert!(cache.begin_load(t0 + took + Duration::from_secs(21)));
        assert!(cache.at(3).is_none(), "a load lets go of the old version");
        let t1 = t0 + Duration::from_secs(30);
        cache.end_load(None, t1, t1 + Duration::from_millis(1));
        // At least five seconds apart, however short the load; unless asked outright.
        assert!(!cache.begin_load(t1 + Duration::from_secs(4)));
        cache.allow_load_now();
        assert!(cache.begin_load(t1 + Duration::from_secs(4)));
        // Off: never loads.
        assert!(!FlatCache::new(0).begin_load(t0));
        // A table too large to hold is reported once.
        assert!(cache.first_too_large());
        assert!(!cache.first_too_large());
    }
}
