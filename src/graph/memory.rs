//! The whole graph of a set of in-memory sources, without stores: parse, chunk, attribute,
//! resolve. Used by tests, fixtures and the accuracy benchmark, and as the reference
//! for what the indexer persists.

use std::collections::HashMap;
use std::path::Path;

use super::metadata::GraphSlice;
use super::{FileFacts, FileView, ModuleResolver, Resolver, SymbolNode};
use crate::chunk::{ChunkOptions, CodeChunk, chunk_file};
use crate::parse::{ParseLimits, parse_bytes};
use crate::store::{EdgeRecord, SymbolRecord};

/// Sources analysed together.
#[derive(Debug, Default)]
pub struct MemoryGraph {
    /// Chunks per file.
    pub chunks: HashMap<String, Vec<CodeChunk>>,
    /// Edges per source file.
    pub edges: HashMap<String, Vec<EdgeRecord>>,
    /// Everything, for [`GraphSlice::metadata`].
    pub slice: GraphSlice,
    /// Files that did not parse, with the reason.
    pub failed: Vec<(String, String)>,
}

impl MemoryGraph {
    /// Analyses `files` (`(repository-relative path, source)`) with `configs`
    /// (`tsconfig.json` / `package.json` texts by path).
    pub fn build(files: &[(String, String)], configs: &[(String, String)]) -> MemoryGraph {
        let mut graph = MemoryGraph::default();
        let mut views = Vec::new();
        for (path, source) in files {
            let parsed =
                match parse_bytes(Path::new(path), source.as_bytes(), &ParseLimits::default()) {
                    Ok(p) => p,
                    Err(e) => {
                        graph.failed.push((path.clone(), e.to_string()));
                        continue;
                    }
                };
            let chunks = chunk_file(path, source, &parsed, &ChunkOptions::default());
            let facts = FileFacts::attribute(&parsed.refs, &chunks);
            let records: Vec<SymbolRecord> = chunks.iter().map(SymbolRecord::from_chunk).collect();
            views.push(FileView {
                path: path.clone(),
                symbols: records.iter().filter_map(SymbolNode::from_record).collect(),
                facts,
            });
            for (chunk, record) in chunks.iter().zip(records) {
                graph
                    .slice
                    .children
                    .insert(chunk.id.clone(), chunk.child_chunk_ids.clone());
                graph
                    .slice
                    .symbols
                    .insert(chunk.id.clone(), (path.clone(), record));
            }
            graph.chunks.insert(path.clone(), chunks);
        }
        let modules = ModuleResolver::new(views.iter().map(|v| v.path.clone()), configs);
        let mut resolver = Resolver::new(modules);
        let paths: Vec<String> = views.iter().map(|v| v.path.clone()).collect();
        for view in views {
            resolver.add(view);
        }
        for path in paths {
            let edges = resolver.edges(&path);
            for e in &edges {
                graph
                    .slice
                    .outgoing
                    .entry(e.from_chunk.clone())
                    .or_default()
                    .push(e.clone());
                if let Some(to) = &e.to_chunk {
                    graph
                        .slice
                        .incoming
                        .entry(to.clone())
                        .or_default()
                        .push(e.clone());
                }
            }
            graph.edges.insert(path, edges);
        }
        graph
    }

    /// The chunk id of `File > Breadcrumb` (`src/a.ts`, `Class > method`).
    pub fn find(&self, path: &str, breadcrumb: &str) -> Option<&CodeChunk> {
        self.chunks
            .get(path)?
            .iter()
            .find(|c| c.breadcrumb == breadcrumb)
    }
}
