//! The graph stage of a sync: after chunks and symbols are written, the symbol-graph
//! edges of every changed file, and of every file that imports one (transitively, so that
//! barrels and inheritance chains are followed), are re-resolved from the stored facts and
//! replaced. Files the resolution needs beyond those (the modules they import, the classes
//! they extend) are loaded on demand; nothing is re-parsed. Files are resolved
//! [`RESOLVE_BATCH`] at a time, each batch written before the next is loaded, so the
//! stage's memory follows the batch, not the repository (a cold index resolves every file).

use std::collections::{BTreeSet, HashMap, HashSet};

use super::IndexError;
use super::progress::{Phase, Progress};
use crate::graph::{FileFacts, FileView, ModuleResolver, Resolver, SymbolNode, dir_of};
use crate::store::{EdgeRecord, MetaStore, SymbolRecord};

/// At most this many resolve-and-load rounds (each round loads what the last one missed).
const MAX_ROUNDS: usize = 32;
/// Files per edge-writing transaction.
const WRITE_BATCH: usize = 200;
/// Files resolved together: each batch loads its files and what they need, writes its
/// edges and is dropped, so memory follows the batch, not the repository (a cold index
/// re-resolves every file).
const RESOLVE_BATCH: usize = 1_000;

/// What the graph stage did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GraphReport {
    /// Files whose edges were re-resolved.
    pub files: usize,
    /// Edges written.
    pub edges: usize,
    /// Files loaded to resolve them.
    pub loaded: usize,
}

/// The `imports` edge targets that mean "imports `path`": the path itself, and the
/// unresolved forms an import of it took before it existed (`?dir/name`, `?dir/name.js`,
/// `?dir` for an `index` file).
fn import_keys(path: &str) -> Vec<String> {
    let mut keys = vec![path.to_string(), format!("?{path}")];
    let stem = path
        .strip_suffix(".d.ts")
        .or_else(|| path.rsplit_once('.').map(|(s, _)| s))
        .unwrap_or(path);
    keys.push(format!("?{stem}"));
    keys.push(format!("?{stem}.js"));
    if stem == "index" || stem.ends_with("/index") {
        keys.push(format!("?{}", dir_of(stem)));
    }
    keys
}

/// The files a graph stage resolves against: one repository's, or a tracked ref's seen
/// over its repository (the ref's own files, and the repository's others).
#[derive(Debug, Clone)]
pub(super) struct GraphView {
    /// Whose edges are written (the repository or the tracked ref).
    pub repo_id: String,
    /// For a tracked ref: its repository, whose files the ref does not hold are read
    /// from there.
    pub base: Option<String>,
}

/// Facts and symbols of `paths` into `resolver`, each read from the view's own files, or
/// from its base for the files it does not hold (`own`: the paths it records).
async fn load(
    meta: &dyn MetaStore,
    view: &GraphView,
    own: &HashSet<String>,
    paths: &[String],
    resolver: &mut Resolver,
) -> Result<usize, IndexError> {
    let (mine, theirs): (Vec<String>, Vec<String>) = match &view.base {
        Some(_) => paths.iter().cloned().partition(|p| own.contains(p)),
        None => (paths.to_vec(), Vec::new()),
    };
    let mut facts: HashMap<String, String> = HashMap::new();
    // One query per few hundred files, not one per file (in source order per file).
    let mut by_file: HashMap<String, Vec<SymbolRecord>> = HashMap::new();
    for (repo_id, part) in [(Some(&view.repo_id), mine), (view.base.as_ref(), theirs)] {
        let Some(repo_id) = repo_id else { continue };
        if part.is_empty() {
            continue;
        }
        facts.extend(meta.files_facts(repo_id, &part).await?);
        for (path, symbol) in meta.symbols_of_files(repo_id, &part).await? {
            by_file.entry(path).or_default().push(symbol);
        }
    }
    for path in paths {
        let symbols = by_file.remove(path).unwrap_or_default();
        let facts: FileFacts = facts
            .get(path)
            .and_then(|json| serde_json::from_str(json).ok())
            .unwrap_or_default();
        resolver.add(FileView {
            path: path.clone(),
            symbols: symbols.iter().filter_map(SymbolNode::from_record).collect(),
            facts,
        });
    }
    Ok(paths.len())
}

/// The edges of `group`, from a resolver that holds the group and what it needs (loaded
/// in rounds, counted in `loaded`); dropped with the group.
async fn resolve_group(
    meta: &dyn MetaStore,
    view: &GraphView,
    own: &HashSet<String>,
    modules: &ModuleResolver,
    group: &[String],
    loaded: &mut usize,
) -> Result<Vec<(String, Vec<EdgeRecord>)>, IndexError> {
    let mut resolver = Resolver::new(modules.clone());
    *loaded += load(meta, view, own, group, &mut resolver).await?;
    let mut rounds = 0;
    loop {
        let edges = group
            .iter()
            .map(|p| (p.clone(), resolver.edges(p)))
            .collect();
        let missing = resolver.missing();
        rounds += 1;
        if missing.is_empty() || rounds >= MAX_ROUNDS {
            return Ok(edges);
        }
        *loaded += load(meta, view, own, &missing, &mut resolver).await?;
    }
}

/// Re-resolves the edges of `changed` files and their importers. See the module docs.
pub(super) async fn update_graph(
    meta: &dyn MetaStore,
    view: &GraphView,
    changed: Vec<String>,
    configs: &[(String, String)],
    progress: &mut Progress,
) -> Result<GraphReport, IndexError> {
    progress.report(
        Phase::Graph,
        0,
        0,
        Some("resolving the symbol graph".into()),
    );
    let repo_id = view.repo_id.as_str();
    let files = meta.list_files(repo_id).await?;
    let indexed: HashSet<String> = files
        .iter()
        .filter(|f| f.skip_reason.is_none())
        .map(|f| f.path.clone())
        .collect();
    let recorded: HashSet<&str> = files.iter().map(|f| f.path.as_str()).collect();
    let own: HashSet<String> = recorded.iter().map(|p| p.to_string()).collect();
    // A tracked ref's modules are its own files and its repository's it does not hold.
    let mut visible = indexed.clone();
    if let Some(base) = &view.base {
        visible.extend(
            meta.list_files(base)
                .await?
                .into_iter()
                .filter(|f| f.skip_reason.is_none() && !own.contains(&f.path))
                .map(|f| f.path),
        );
    }
    // Changed files, then whoever imports them, until nothing new turns up.
    let mut affected: BTreeSet<String> = changed.iter().cloned().collect();
    let mut frontier = changed;
    while !frontier.is_empty() {
        let keys: Vec<String> = frontier.iter().flat_map(|p| import_keys(p)).collect();
        frontier = meta
            .importers(repo_id, &keys)
            .await?
            .into_iter()
            .filter(|p| affected.insert(p.clone()))
            .collect();
    }
    let targets: Vec<String> = affected
        .iter()
        .filter(|p| indexed.contains(*p))
        .cloned()
        .collect();
    // Files that are recorded but no longer indexed keep no edges.
    let dropped: Vec<(String, Vec<EdgeRecord>)> = affected
        .iter()
        .filter(|p| !indexed.contains(*p) && recorded.contains(p.as_str()))
        .map(|p| (p.clone(), Vec::new()))
        .collect();
    let modules = ModuleResolver::new(visible.iter().cloned(), configs);
    let mut report = GraphReport {
        files: targets.len(),
        ..GraphReport::default()
    };
    let total = (targets.len() + dropped.len()) as u64;
    let mut written = 0u64;
    // Each group of targets, resolved and written in turn; then the dropped files.
    let mut groups = targets.chunks(RESOLVE_BATCH);
    let mut dropped = Some(dropped);
    loop {
        let edges = if let Some(group) = groups.next() {
            resolve_group(meta, view, &own, &modules, group, &mut report.loaded).await?
        } else if let Some(rest) = dropped.take() {
            rest
        } else {
            break;
        };
        for batch in edges.chunks(WRITE_BATCH) {
            report.edges += batch.iter().map(|(_, e)| e.len()).sum::<usize>();
            meta.replace_files_edges(repo_id, batch).await?;
            written += batch.len() as u64;
            progress.report(Phase::Graph, written, total, None);
        }
    }
    progress.report(
        Phase::Graph,
        total,
        total,
        Some(format!(
            "{} edges from {} files ({} loaded)",
            report.edges, report.files, report.loaded
        )),
    );
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::import_keys;

    #[test]
    fn import_keys_cover_unresolved_forms() {
        assert_eq!(
            import_keys("src/a/index.ts"),
            [
                "src/a/index.ts",
                "?src/a/index.ts",
                "?src/a/index",
                "?src/a/index.js",
                "?src/a"
            ]
        );
        assert_eq!(
            import_keys("types.d.ts"),
            ["types.d.ts", "?types.d.ts", "?types", "?types.js"]
        );
    }
}
