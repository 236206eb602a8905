//! Chunk rows read out of the chunk table's Arrow batches (pure): [`RowReader`] looks up
//! a batch's columns once and builds any of its rows from them, copying only that row's
//! values. Query results (every row of a batch) and the rows held in memory
//! ([`super::flat`]: a few rows of many batches, read where they lie) both go through it.
//! A row that keeps its code as lines of its file reads them through [`FileSource`] (the
//! grep index: [`CodeReader`]); everything else is pure.

use std::cell::RefCell;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float16Type, Float32Type, Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{
    Array, ArrayRef, BooleanArray, DictionaryArray, FixedSizeListArray, GenericStringArray,
    ListArray, PrimitiveArray, RecordBatch, StringViewArray,
};
use arrow_schema::DataType;

use super::{ChunkRow, FileSource, StoreError, texts};
use crate::chunk::CodeChunk;
use crate::parse::{ByteRange, Language, Modifier, SymbolKind};

/// Column `name` of `batch`; the error names it.
pub(super) fn column<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a ArrayRef, StoreError> {
    batch
        .column_by_name(name)
        .ok_or_else(|| StoreError::Invalid(format!("chunk store result lacks column `{name}`")))
}

/// A text column in any of Arrow's three layouts of strings, or as a dictionary of them
/// (how memory holds a column that repeats its values: `store::flat`).
#[derive(Debug, Clone, Copy)]
enum Text<'a> {
    Utf8(&'a GenericStringArray<i32>),
    Large(&'a GenericStringArray<i64>),
    View(&'a StringViewArray),
    Dictionary(&'a DictionaryArray<Int32Type>, &'a GenericStringArray<i32>),
}

impl<'a> Text<'a> {
    fn of(batch: &'a RecordBatch, name: &str) -> Result<Self, StoreError> {
        let col = column(batch, name)?;
        match col.data_type() {
            DataType::Utf8 => Ok(Self::Utf8(col.as_string::<i32>())),
            DataType::LargeUtf8 => Ok(Self::Large(col.as_string::<i64>())),
            DataType::Utf8View => Ok(Self::View(col.as_string_view())),
            DataType::Dictionary(key, value)
                if **key == DataType::Int32 && **value == DataType::Utf8 =>
            {
                let dictionary = col.as_dictionary::<Int32Type>();
                Ok(Self::Dictionary(
                    dictionary,
                    dictionary.values().as_string::<i32>(),
                ))
            }
            other => Err(StoreError::Invalid(format!(
                "column `{name}` is {other}, not text"
            ))),
        }
    }

    /// Row `i`'s value (`None` for a null).
    fn get(self, i: usize) -> Option<&'a str> {
        match self {
            Self::Utf8(a) => (!a.is_null(i)).then(|| a.value(i)),
            Self::Large(a) => (!a.is_null(i)).then(|| a.value(i)),
            Self::View(a) => (!a.is_null(i)).then(|| a.value(i)),
            Self::Dictionary(keys, values) => {
                (!keys.is_null(i)).then(|| values.value(keys.keys().value(i) as usize))
            }
        }
    }
}

/// A text column that holds a value in every row.
#[derive(Debug, Clone, Copy)]
struct Required<'a> {
    text: Text<'a>,
    name: &'static str,
}

impl<'a> Required<'a> {
    fn of(batch: &'a RecordBatch, name: &'static str) -> Result<Self, StoreError> {
        Ok(Self {
            text: Text::of(batch, name)?,
            name,
        })
    }

    fn get(self, i: usize) -> Result<&'a str, StoreError> {
        self.text
            .get(i)
            .ok_or_else(|| StoreError::Invalid(format!("null in required column `{}`", self.name)))
    }
}

/// Every value of text column `name` (`None` for nulls).
pub(super) fn strings(batch: &RecordBatch, name: &str) -> Result<Vec<Option<String>>, StoreError> {
    let text = Text::of(batch, name)?;
    Ok((0..batch.num_rows())
        .map(|i| text.get(i).map(str::to_string))
        .collect())
}

/// Every value of text column `name`, none of which may be null.
pub(super) fn required(batch: &RecordBatch, name: &'static str) -> Result<Vec<String>, StoreError> {
    let text = Required::of(batch, name)?;
    (0..batch.num_rows())
        .map(|i| text.get(i).map(str::to_string))
        .collect()
}

fn list<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a ListArray, StoreError> {
    column(batch, name)?
        .as_list_opt::<i32>()
        .ok_or_else(|| StoreError::Invalid(format!("column `{name}` is not a list")))
}

pub(super) fn primitive<'a, T: arrow_array::ArrowPrimitiveType>(
    batch: &'a RecordBatch,
    name: &str,
) -> Result<&'a PrimitiveArray<T>, StoreError> {
    let col = column(batch, name)?;
    col.as_primitive_opt::<T>()
        .ok_or_else(|| StoreError::Invalid(format!("column `{name}` has type {}", col.data_type())))
}

fn booleans<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a BooleanArray, StoreError> {
    column(batch, name)?
        .as_boolean_opt()
        .ok_or_else(|| StoreError::Invalid(format!("column `{name}` is not boolean")))
}

/// Rows' code, from the row or, where the row keeps it as lines of its file
/// ([`texts::FROM_FILE`]), from the file's version in `sources` (the grep index), one
/// file read at a time for the rows of the same file that follow.
#[derive(Debug, Default)]
pub(super) struct CodeReader<'a> {
    sources: Option<&'a dyn FileSource>,
    /// The last file read.
    last: RefCell<Option<ReadFile>>,
}

/// A file's version as [`CodeReader`] read it: its text and line starts, or `None` where
/// the sources do not hold it (so that its other rows do not look for it again).
#[derive(Debug)]
struct ReadFile {
    repo: String,
    path: String,
    hash: String,
    text: Option<Arc<texts::FileText>>,
}

impl<'a> CodeReader<'a> {
    pub(super) fn new(sources: Option<&'a dyn FileSource>) -> Self {
        Self {
            sources,
            last: RefCell::new(None),
        }
    }

    /// A row's code from its stored `full_source`, and whether it was kept as lines of
    /// its file; [`StoreError::CodeNotHeld`] where the file's version is not held.
    pub(super) fn code(
        &self,
        stored: &str,
        (repo, path, hash): (&str, &str, &str),
        (start, end): (u32, u32),
    ) -> Result<(String, bool), StoreError> {
        if stored != texts::FROM_FILE {
            return Ok((stored.to_string(), false));
        }
        let missing = || StoreError::CodeNotHeld {
            path: path.to_string(),
            hash: hash.to_string(),
        };
        let mut last = self.last.borrow_mut();
        let held = last
            .as_ref()
            .is_some_and(|f| f.repo == repo && f.path == path && f.hash == hash);
        if !held {
            *last = Some(ReadFile {
                repo: repo.into(),
                path: path.into(),
                hash: hash.into(),
                text: self.sources.and_then(|s| s.file_text(repo, path, hash)),
            });
        }
        let lines = last
            .as_ref()
            .and_then(|f| f.text.as_ref())
            .and_then(|text| text.lines(start, end))
            .ok_or_else(missing)?;
        Ok((lines.to_string(), true))
    }
}

/// The columns of one batch, looked up once, from which any of its rows is built.
#[derive(Debug)]
pub(super) struct RowReader<'a> {
    code: CodeReader<'a>,
    repo: Required<'a>,
    id: Required<'a>,
    file_path: Required<'a>,
    rel: Required<'a>,
    language: Required<'a>,
    kind: Required<'a>,
    name: Required<'a>,
    parent_name: Text<'a>,
    parent_id: Text<'a>,
    jsdoc: Text<'a>,
    native_kind: Text<'a>,
    children: &'a ListArray,
    imports: &'a ListArray,
    depth: &'a PrimitiveArray<UInt32Type>,
    crumb: Required<'a>,
    sig: Required<'a>,
    mods: Required<'a>,
    exported: &'a BooleanArray,
    start: &'a PrimitiveArray<UInt32Type>,
    end: &'a PrimitiveArray<UInt32Type>,
    sb: &'a PrimitiveArray<UInt64Type>,
    eb: &'a PrimitiveArray<UInt64Type>,
    full: Required<'a>,
    content: Required<'a>,
    /// Columns a query may leave out (see `LanceStore::columns_but`), read as empty.
    emb: Option<Required<'a>>,
    search: Option<Required<'a>>,
    collapsed: &'a BooleanArray,
    tokens: &'a PrimitiveArray<UInt32Type>,
    truncated: &'a BooleanArray,
    hash: Required<'a>,
    modified: &'a PrimitiveArray<Int64Type>,
    vectors: Option<&'a FixedSizeListArray>,
    /// Rows written before their vector was computed hold a placeholder, read as none.
    embedded: Option<&'a BooleanArray>,
}

impl<'a> RowReader<'a> {
    /// Looks up every column of `batch`, with those named in `leave` read as absent (empty
    /// texts, no vector); the error names a missing or mistyped one.
    pub(super) fn new(
        batch: &'a RecordBatch,
        leave: &[&str],
        sources: Option<&'a dyn FileSource>,
    ) -> Result<Self, StoreError> {
        let text = |name: &'static str| Required::of(batch, name);
        let present = |name: &str| !leave.contains(&name) && batch.column_by_name(name).is_some();
        let optional = |name: &'static str| present(name).then(|| text(name)).transpose();
        let vectors = match present("vector") {
            true => Some(
                column(batch, "vector")?
                    .as_fixed_size_list_opt()
                    .ok_or_else(|| {
                        StoreError::Invalid("column `vector` is not a fixed-size list".into())
                    })?,
            ),
            false => None,
        };
        Ok(Self {
            code: CodeReader::new(sources),
            repo: text("repo_id")?,
            id: text("id")?,
            file_path: text("file_path")?,
            rel: text("relative_path")?,
            language: text("language")?,
            kind: text("node_kind")?,
            name: text("name")?,
            parent_name: Text::of(batch, "parent_name")?,
            parent_id: Text::of(batch, "parent_chunk_id")?,
            jsdoc: Text::of(batch, "jsdoc")?,
            native_kind: Text::of(batch, "native_kind")?,
            children: list(batch, "child_chunk_ids")?,
            imports: list(batch, "relevant_imports")?,
            depth: primitive(batch, "depth")?,
            crumb: text("breadcrumb")?,
            sig: text("signature")?,
            mods: text("modifiers")?,
            exported: booleans(batch, "exported")?,
            start: primitive(batch, "start_line")?,
            end: primitive(batch, "end_line")?,
            sb: primitive(batch, "start_byte")?,
            eb: primitive(batch, "end_byte")?,
            full: text("full_source")?,
            content: text("content")?,
            emb: optional("embedding_text")?,
            search: optional("search_text")?,
            collapsed: booleans(batch, "has_collapsed_children")?,
            tokens: primitive(batch, "embedding_tokens")?,
            truncated: booleans(batch, "truncated")?,
            hash: text("content_hash")?,
            modified: primitive(batch, "last_modified")?,
            vectors,
            embedded: match present("embedded") {
                true => Some(booleans(batch, "embedded")?),
                false => None,
            },
        })
    }

    /// Row `i` of the batch.
    pub(super) fn row(&self, i: usize) -> Result<ChunkRow, StoreError> {
        let own = |t: Required<'a>| t.get(i).map(str::to_string);
        let maybe = |t: Text<'a>| t.get(i).map(str::to_string);
        let or_empty = |t: Option<Required<'a>>| t.map_or(Ok(String::new()), own);
        let (start_line, end_line) = (self.start.value(i), self.end.value(i));
        let content_hash = own(self.hash)?;
        let (full_source, code_in_file) = self.code.code(
            self.full.get(i)?,
            (self.repo.get(i)?, self.rel.get(i)?, &content_hash),
            (start_line, end_line),
        )?;
        let symbol_start = self.sb.value(i) as usize;
        let (content, collapsed) =
            texts::unpack_chunk_content(&full_source, own(self.content)?, symbol_start);
        let embedding_text = texts::unpack_embedding(&content, or_empty(self.emb)?);
        let (language, kind) = (self.language.get(i)?, self.kind.get(i)?);
        let chunk = CodeChunk {
            id: own(self.id)?,
            relative_path: own(self.rel)?,
            language: Language::parse(language)
                .ok_or_else(|| StoreError::Invalid(format!("unknown language `{language}`")))?,
            node_kind: SymbolKind::parse(kind)
                .ok_or_else(|| StoreError::Invalid(format!("unknown node kind `{kind}`")))?,
            native_kind: maybe(self.native_kind),
            name: own(self.name)?,
            parent_name: maybe(self.parent_name),
            parent_chunk_id: maybe(self.parent_id),
            child_chunk_ids: texts_of(self.children, i, "child_chunk_ids")?,
            depth: self.depth.value(i),
            breadcrumb: own(self.crumb)?,
            signature: own(self.sig)?,
            modifiers: self
                .mods
                .get(i)?
                .split_whitespace()
                .filter_map(Modifier::parse)
                .collect(),
            exported: self.exported.value(i),
            jsdoc: maybe(self.jsdoc),
            start_line,
            end_line,
            bytes: ByteRange {
                start: symbol_start,
                end: self.eb.value(i) as usize,
            },
            full_source,
            content,
            has_collapsed_children: self.collapsed.value(i),
            collapsed,
            relevant_imports: texts_of(self.imports, i, "relevant_imports")?,
            embedding_text,
            embedding_tokens: self.tokens.value(i) as usize,
            truncated: self.truncated.value(i),
            search_text: or_empty(self.search)?,
        };
        let waiting = self.embedded.is_some_and(|e| !e.value(i));
        Ok(ChunkRow {
            repo_id: own(self.repo)?,
            file_path: own(self.file_path)?,
            chunk,
            content_hash,
            last_modified: self.modified.value(i),
            vector: match self.vectors {
                Some(vectors) if !waiting => vector(vectors, i)?,
                _ => Vec::new(),
            },
            code_in_file,
        })
    }
}

/// Row `i` of a list-of-text column.
fn texts_of(list: &ListArray, i: usize, name: &str) -> Result<Vec<String>, StoreError> {
    let values = list.value(i);
    let values = values
        .as_string_opt::<i32>()
        .ok_or_else(|| StoreError::Invalid(format!("column `{name}` is not a list of text")))?;
    Ok(values.iter().flatten().map(str::to_string).collect())
}

/// Row `i`'s vector as `f32`s.
fn vector(list: &FixedSizeListArray, i: usize) -> Result<Vec<f32>, StoreError> {
    let v = list.value(i);
    if let Some(halves) = v.as_primitive_opt::<Float16Type>() {
        return Ok(halves.values().iter().map(|h| h.to_f32()).collect());
    }
    let floats = v.as_primitive_opt::<Float32Type>().ok_or_else(|| {
        StoreError::Invalid(format!(
            "column `vector` holds {} (float16 or float32 expected)",
            v.data_type()
        ))
    })?;
    Ok(floats.values().to_vec())
}
