//! A file's name facts attributed to its chunks: each reference gets the id of the
//! innermost chunk it occurs in, and references to nested local declarations get the id
//! of that declaration's chunk. This is what the indexer stores per file and what
//! [`super::Resolver`] binds across files. Pure.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::chunk::CodeChunk;
use crate::parse::SymbolKind;
use crate::parse::refs::{Export, FileRefs, ImportBinding, RefBase, RefKind, RefTarget};

/// What a member access is applied to, with local declarations resolved to chunks.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "b", content = "v")]
pub enum Base {
    /// `this`.
    This,
    /// `super`.
    Super,
    /// A free name.
    Name(String),
    /// A local whose declared type names this type.
    Typed(String),
    /// A nested declaration (chunk id) of the same file.
    Chunk(String),
    /// A receiver of unknown type, as written.
    Unknown(String),
    /// A member of `this` (`this.store` in `this.store.get()`).
    ThisMember(String),
    /// Parameter `.2` of a callback passed as argument `.1` to `.0` (contextual typing).
    Callback(Box<Target>, usize, usize),
}

/// What a reference names, with local declarations resolved to chunks.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "t", content = "v")]
pub enum Target {
    /// A free name.
    Name(String),
    /// A nested declaration (chunk id) of the same file.
    Chunk(String),
    /// `base.member`.
    Member(Base, String),
}

/// One reference, attributed to the chunk it occurs in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FactRef {
    /// Id of the innermost chunk containing the occurrence.
    pub from: String,
    /// 1-indexed line.
    pub line: u32,
    /// How it is used.
    pub kind: RefKind,
    /// What it names.
    pub target: Target,
}

/// A module the file depends on, attributed to the chunk of the statement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FactModule {
    /// Chunk of the import / re-export / `require` statement.
    pub from: String,
    /// Module specifier as written.
    pub module: String,
}

/// Everything the graph keeps of one file between syncs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileFacts {
    /// Local names bound by imports.
    pub imports: Vec<ImportBinding>,
    /// Exports other than `export`-modified declarations.
    pub exports: Vec<Export>,
    /// Modules the file depends on.
    pub modules: Vec<FactModule>,
    /// References, deduplicated per (chunk, kind, target), first occurrence kept.
    pub refs: Vec<FactRef>,
    /// Declared types of chunks (fields, properties, variables): `(chunk id, type name)`.
    #[serde(default)]
    pub declared: Vec<(String, String)>,
    /// Function-typed parameters: `(chunk id, parameter position, callback parameter types)`.
    #[serde(default)]
    pub callbacks: Vec<(String, usize, Vec<Option<String>>)>,
}

/// Innermost-chunk lookup over one file's chunks.
struct Enclosing<'c> {
    /// Chunks sorted by start ascending, then end descending (parents first).
    sorted: Vec<&'c CodeChunk>,
}

impl<'c> Enclosing<'c> {
    fn new(chunks: &'c [CodeChunk]) -> Self {
        let mut sorted: Vec<&CodeChunk> = chunks.iter().collect();
        sorted.sort_by(|a, b| {
            a.bytes
                .start
                .cmp(&b.bytes.start)
                .then(b.bytes.end.cmp(&a.bytes.end))
        });
        Self { sorted }
    }

    /// The innermost named chunk containing `offset`: of the chunks containing it, the one
    /// that starts last (chunks nest), found scanning back from the last chunk starting at
    /// or before `offset`. Anonymous callbacks are skipped: what an inline callback calls,
    /// the function that contains it calls (as the TypeScript call hierarchy counts it).
    fn at(&self, offset: usize) -> Option<&'c CodeChunk> {
        let end = self.sorted.partition_point(|c| c.bytes.start <= offset);
        self.sorted[..end]
            .iter()
            .rev()
            .find(|c| c.bytes.contains_offset(offset) && c.node_kind != SymbolKind::Callback)
            .copied()
    }
}

impl FileFacts {
    /// Attributes `refs` (one file's name facts) to `chunks` (the same file's chunks).
    /// Occurrences outside every chunk are dropped.
    pub fn attribute(refs: &FileRefs, chunks: &[CodeChunk]) -> FileFacts {
        let enclosing = Enclosing::new(chunks);
        let mut by_name: HashMap<&str, Vec<&CodeChunk>> = HashMap::new();
        for c in chunks {
            by_name.entry(c.name.as_str()).or_default().push(c);
        }
        // The chunk declaring `name` whose span holds the name at `decl`.
        let declared = |name: &str, decl: usize| -> Option<String> {
            by_name
                .get(name)?
                .iter()
                .filter(|c| c.bytes.contains_offset(decl))
                .max_by_key(|c| c.depth)
                .map(|c| c.id.clone())
        };
        let mut seen = std::collections::HashSet::new();
        let mut out = FileFacts {
            imports: refs.imports.clone(),
            exports: refs.exports.clone(),
            ..FileFacts::default()
        };
        for m in &refs.modules {
            if let Some(chunk) = enclosing.at(m.offset) {
                out.modules.push(FactModule {
                    from: chunk.id.clone(),
                    module: m.module.clone(),
                });
            }
        }
        for d in &refs.declared {
            if let Some(chunk) = enclosing.at(d.offset)
                && chunk.bytes.start <= d.offset
                && !chunk.node_kind.has_code_body()
            {
                out.declared.push((chunk.id.clone(), d.type_name.clone()));
            }
        }
        for c in &refs.callbacks {
            if let Some(chunk) = enclosing.at(c.offset) {
                out.callbacks
                    .push((chunk.id.clone(), c.arg, c.params.clone()));
            }
        }
        // A reference target with local declarations turned into chunk ids.
        fn convert(
            target: &RefTarget,
            declared: &dyn Fn(&str, usize) -> Option<String>,
            enclosing: &Enclosing<'_>,
        ) -> Option<Target> {
            Some(match target {
                RefTarget::Name { name } => Target::Name(name.clone()),
                RefTarget::Local { name, decl } => Target::Chunk(declared(name, *decl)?),
                RefTarget::Member { base, member } => {
                    let base = match base {
                        RefBase::This => Base::This,
                        RefBase::Super => Base::Super,
                        RefBase::Name(n) => Base::Name(n.clone()),
                        RefBase::Typed(t) => Base::Typed(t.clone()),
                        RefBase::Unknown(t) => Base::Unknown(t.clone()),
                        RefBase::ThisMember(m) => Base::ThisMember(m.clone()),
                        RefBase::Local(decl) => match enclosing.at(*decl) {
                            // The declaration's own chunk: the one whose span holds its name.
                            Some(c) if c.bytes.start <= *decl => Base::Chunk(c.id.clone()),
                            _ => return None,
                        },
                        RefBase::Callback { callee, arg, param } => Base::Callback(
                            Box::new(convert(callee, declared, enclosing)?),
                            *arg,
                            *param,
                        ),
                    };
                    Target::Member(base, member.clone())
                }
            })
        }
        for r in &refs.references {
            let Some(from) = enclosing.at(r.offset) else {
                continue;
            };
            let Some(target) = convert(&r.target, &declared, &enclosing) else {
                continue;
            };
            if r.kind == RefKind::Read && matches!(&target, Target::Chunk(id) if *id == from.id) {
                continue;
            }
            if seen.insert((from.id.clone(), r.kind, target.clone())) {
                out.refs.push(FactRef {
                    from: from.id.clone(),
                    line: r.line,
                    kind: r.kind,
                    target,
                });
            }
        }
        out
    }
}
