//! Structural enrichment (the blueprint's stage 3): the selected results' metadata from
//! the stored symbol graph: their edges in and out, their members, and the symbols at
//! the other ends. It adds no results; it describes them.

use std::collections::{BTreeSet, HashMap, HashSet};

use tracing::Instrument;

use super::{SearchError, SearchHit};
use crate::graph::{GraphSlice, SymbolMetadata, SymbolRef};
use crate::store::MetaStore;

/// Metadata of each hit, in order. A hit the graph does not know (its file was indexed
/// before the graph existed) gets what its chunk says.
pub async fn enrich(
    meta: &dyn MetaStore,
    hits: &[SearchHit],
) -> Result<Vec<SymbolMetadata>, SearchError> {
    let mut slices: HashMap<&str, GraphSlice> = HashMap::new();
    for repo in hits
        .iter()
        .map(|h| h.repo_id.as_str())
        .collect::<BTreeSet<_>>()
    {
        let mine: Vec<&SearchHit> = hits.iter().filter(|h| h.repo_id == repo).collect();
        slices.insert(repo, slice(meta, repo, &mine).await?);
    }
    let mut out = Vec::with_capacity(hits.len());
    for h in hits {
        let mut metadata = slices
            .get(h.repo_id.as_str())
            .and_then(|s| s.metadata(&h.chunk.id))
            .unwrap_or_else(|| from_hit(h));
        if h.chunk.language.category() == crate::parse::Category::Docs {
            metadata.mentions = mentioned(meta, h).await?;
        }
        out.push(metadata);
    }
    Ok(out)
}

/// The code symbols a documentation hit names in inline code, resolved in its
/// repository: a name with its parents must match them; a bare name counts when at most
/// [`MAX_MENTION_MATCHES`] symbols carry it (a common word names nothing in particular).
async fn mentioned(meta: &dyn MetaStore, hit: &SearchHit) -> Result<Vec<SymbolRef>, SearchError> {
    let repos = [hit.repo_id.clone()];
    let mut out: Vec<SymbolRef> = Vec::new();
    for (parents, name) in crate::parse::text::mentions(&hit.chunk.full_source) {
        let found = meta.symbols_named(&name, &repos).await?;
        let code: Vec<&(String, String, crate::store::SymbolRecord)> = found
            .iter()
            .filter(|(_, path, _)| {
                crate::parse::Language::from_path(std::path::Path::new(path))
                    .is_some_and(|l| l.category() == crate::parse::Category::Code)
            })
            .filter(|(_, _, s)| {
                parents.is_empty() || s.parent_name.as_deref() == parents.last().map(String::as_str)
            })
            .collect();
        if code.is_empty() || code.len() > MAX_MENTION_MATCHES {
            continue;
        }
        for (_, path, symbol) in code {
            out.push(SymbolRef {
                id: Some(symbol.chunk_id.clone()),
                name: crate::graph::display_name(&symbol.breadcrumb),
                path: Some(path.clone()),
            });
        }
    }
    Ok(out)
}

/// Most symbols one bare mentioned name may resolve to.
const MAX_MENTION_MATCHES: usize = 3;

/// The graph around `hits` of one repository: the hits with their members, their edges
/// (and those of class-like hits' members), and the symbols at the other ends by name.
async fn slice(
    meta: &dyn MetaStore,
    repo: &str,
    hits: &[&SearchHit],
) -> Result<GraphSlice, SearchError> {
    let paths: Vec<String> = hits
        .iter()
        .map(|h| h.path.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let hit_ids: Vec<String> = hits.iter().map(|h| h.chunk.id.clone()).collect();
    // The hits' members and the hits' own edges are read at once (each query on its own
    // connection); only the members of class-like hits wait for the first to be known.
    let (members, mut outgoing, mut incoming) = tokio::try_join!(
        meta.symbols_and_members(repo, &paths, &hit_ids)
            .instrument(tracing::debug_span!("enrich.members")),
        meta.edges_from_any(repo, &hit_ids)
            .instrument(tracing::debug_span!("enrich.outgoing")),
        meta.edges_to_any(repo, &hit_ids)
            .instrument(tracing::debug_span!("enrich.incoming")),
    )?;
    tracing::debug!(rows = members.len(), "enrich.members");
    let mut slice = GraphSlice::default();
    let ids = place_symbols(&mut slice, hits, members);
    // Two queries more for all the members, not two per symbol: a class with a hundred
    // members made enrichment the slowest stage on real repositories.
    let asked: HashSet<&str> = hit_ids.iter().map(String::as_str).collect();
    let member_ids: Vec<String> = ids
        .iter()
        .filter(|id| !asked.contains(id.as_str()))
        .cloned()
        .collect();
    if !member_ids.is_empty() {
        let (more_out, more_in) = tokio::try_join!(
            meta.edges_from_any(repo, &member_ids)
                .instrument(tracing::debug_span!("enrich.outgoing")),
            meta.edges_to_any(repo, &member_ids)
                .instrument(tracing::debug_span!("enrich.incoming")),
        )?;
        outgoing.extend(more_out);
        incoming.extend(more_in);
    }
    tracing::debug!(
        ids = ids.len(),
        outgoing = outgoing.len(),
        incoming = incoming.len(),
        "enrich.edges"
    );
    let wanted = place_edges(&mut slice, &ids, outgoing, incoming);
    let ends = meta
        .symbol_names(repo, &wanted)
        .instrument(tracing::debug_span!("enrich.ends"))
        .await?;
    tracing::debug!(rows = ends.len(), "enrich.ends");
    slice.ends = ends.into_iter().map(|e| (e.chunk_id.clone(), e)).collect();
    Ok(slice)
}

/// Puts each hit's symbol and its members (of the hits' files' `members`) into `slice`;
/// returns the ids whose edges are shown: each hit, and the members of a class-like hit.
fn place_symbols(
    slice: &mut GraphSlice,
    hits: &[&SearchHit],
    members: Vec<(String, crate::store::SymbolRecord)>,
) -> Vec<String> {
    let mut files: HashMap<String, Vec<crate::store::SymbolRecord>> = HashMap::new();
    for (path, record) in members {
        files.entry(path).or_default().push(record);
    }
    let none = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    for hit in hits {
        let symbols = files.get(&hit.path).unwrap_or(&none);
        let id = hit.chunk.id.clone();
        let children: Vec<String> = symbols
            .iter()
            .filter(|s| s.parent_chunk_id.as_deref() == Some(id.as_str()))
            .map(|s| s.chunk_id.clone())
            .collect();
        for s in symbols {
            if s.chunk_id == id || children.contains(&s.chunk_id) {
                slice
                    .symbols
                    .insert(s.chunk_id.clone(), (hit.path.clone(), s.clone()));
            }
        }
        ids.push(id.clone());
        if matches!(
            hit.chunk.node_kind.as_str(),
            "class" | "interface" | "component"
        ) {
            ids.extend(children.iter().cloned());
        }
        slice.children.insert(id, children);
    }
    ids
}

/// Files the edges of `ids` under their ends in `slice` (every id gets both lists, empty
/// or not); returns the ids at the other ends that `slice` does not hold yet.
fn place_edges(
    slice: &mut GraphSlice,
    ids: &[String],
    outgoing: Vec<crate::store::EdgeRecord>,
    incoming: Vec<crate::store::EdgeRecord>,
) -> Vec<String> {
    for id in ids {
        slice.outgoing.entry(id.clone()).or_default();
        slice.incoming.entry(id.clone()).or_default();
    }
    let mut wanted: BTreeSet<String> = BTreeSet::new();
    for e in outgoing {
        wanted.extend(e.to_chunk.clone());
        slice
            .outgoing
            .entry(e.from_chunk.clone())
            .or_default()
            .push(e);
    }
    for e in incoming {
        wanted.insert(e.from_chunk.clone());
        if let Some(to) = e.to_chunk.clone() {
            slice.incoming.entry(to).or_default().push(e);
        }
    }
    wanted.retain(|id| !slice.symbols.contains_key(id));
    wanted.into_iter().collect()
}

/// What a hit says about itself, for hits the graph does not know.
pub fn from_hit(hit: &SearchHit) -> SymbolMetadata {
    SymbolMetadata {
        id: hit.chunk.id.clone(),
        name: crate::graph::display_name(&hit.breadcrumb),
        path: hit.path.clone(),
        kind: hit.kind.clone(),
        modifiers: hit
            .chunk
            .modifiers
            .iter()
            .map(|m| m.as_str().to_string())
            .collect(),
        exported: hit.chunk.exported,
        signature: hit.signature.clone(),
        ..SymbolMetadata::default()
    }
}
