//! Scout as a service operation: the query resolved to the symbol(s) it means, the graph
//! read from the stores, the exploration and the synthesis of [`crate::scout`].

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;

use super::refs::Sides;
use super::{Service, ServiceError};
use crate::auth::Principal;
use crate::scout::{
    DEFAULT_BUDGET, Link, LlmRater, MAX_BUDGET, Node, Rater, Relation, ScoutGraph, ScoutQuery,
    ScoutResponse, StructuralRater, VisitedNode, explore, synthesize, synthesize_with,
};
use crate::search::{MAX_QUERY_BYTES, parse_symbol_query};
use crate::store::{EdgeKind, MetaStore, StoreError, SymbolRecord, VectorStore};

/// Most tags one request may give.
pub const MAX_TAGS: usize = 20;

/// Longest neighbour source the syntax checks read, in characters.
const MAX_SOURCE_CHARS: usize = 64 * 1024;

/// Symbol kinds that are statements, never what a question is about.
const STATEMENTS: &[&str] = &["import", "re-export", "export", "expression", "statement"];

/// A scout request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScoutRequest {
    /// What to find out: "what breaks if I add a variant to Kind", or `symbol = …`.
    pub query: String,
    /// Interest tags (`exhaustive`, `call-site`…).
    pub tags: Vec<String>,
    /// Most nodes to explore (default 20, at most 200).
    pub budget: Option<u32>,
    /// Only these repositories (names or ids); default: every one the caller sees.
    pub repositories: Vec<String>,
    /// On this ref the repositories track besides their default one (a `REPO@REF` name
    /// gives one too); default: each repository's default ref.
    pub git_ref: Option<String>,
}

impl ScoutRequest {
    /// Checks the request as [`Service::scout`] will (the field named in the error), so
    /// that an adapter can refuse it before it starts streaming.
    pub fn check(&self) -> Result<(), ServiceError> {
        validate(
            self.query.clone(),
            self.tags.clone(),
            self.budget,
            &self.repositories,
        )
        .map(|_| ())
    }
}

impl Service {
    /// Explores what depends on the symbol the query names and says what must change
    /// with it. `on_visit` sees every rated link as it is rated, with the number of nodes
    /// explored so far (for progress).
    #[tracing::instrument(name = "service.scout", skip_all, fields(enduser.id = caller.name()))]
    pub async fn scout(
        &self,
        caller: &Principal,
        request: ScoutRequest,
        on_visit: impl FnMut(&VisitedNode, u32) + Send,
    ) -> Result<ScoutResponse, ServiceError> {
        let query = validate(
            request.query,
            request.tags,
            request.budget,
            &request.repositories,
        )?;
        let mut names = request.repositories;
        let mut git_ref = request.git_ref;
        self.read_ref_names(caller, &mut names, &mut git_ref)
            .await?;
        let scope = self.search_scope(caller, &names).await?;
        let sides = self.sides(scope, git_ref.as_deref()).await?;
        let (seeds, interpretation) = self
            .seeds(caller, &query.text, &sides, git_ref.as_deref())
            .await?;
        if seeds.is_empty() {
            let nothing = crate::scout::Exploration {
                visited: Vec::new(),
                nodes_visited: 0,
                budget_remaining: query.budget,
            };
            return Ok(synthesize(&[], &nothing, interpretation));
        }
        // An exploration is a search's worth of work: it takes one of the same slots.
        let _slot = self.search_slots.try_acquire().map_err(|_| {
            ServiceError::Busy(
                "the server is answering as many searches as it may; retry shortly".into(),
            )
        })?;
        let graph = StoreGraph {
            meta: self.indexer.meta().as_ref(),
            vectors: self.indexer.vectors().as_ref(),
            sides: &sides,
        };
        let llm = self.scout_model.as_deref().map(LlmRater::new);
        let rater: &dyn Rater = match &llm {
            Some(llm) => llm,
            None => &StructuralRater,
        };
        let exploration = explore(
            &query,
            seeds.clone(),
            &graph,
            rater,
            &self.scout_rule,
            on_visit,
        )
        .await?;
        Ok(match self.scout_model.as_deref() {
            Some(chat) => synthesize_with(chat, &query, &seeds, &exploration, interpretation).await,
            None => synthesize(&seeds, &exploration, interpretation),
        })
    }

    /// The symbols the query means, and how it was read. No symbols (with the reason)
    /// when nothing matches or the name is ambiguous.
    async fn seeds(
        &self,
        caller: &Principal,
        text: &str,
        sides: &Sides,
        git_ref: Option<&str>,
    ) -> Result<(Vec<Node>, String), ServiceError> {
        let meta = self.indexer.meta();
        if let Some(path) = parse_symbol_query(text) {
            let wanted: Vec<&str> = path
                .parents
                .iter()
                .map(String::as_str)
                .chain([path.name.as_str()])
                .collect();
            let breadcrumb = wanted.join(" > ");
            let found: Vec<_> = self
                .symbols_shown(&path.name, sides)
                .await?
                .into_iter()
                .filter(|(_, file, s)| {
                    path.file.as_ref().is_none_or(|f| file == f)
                        && (path.parents.is_empty() || s.breadcrumb == breadcrumb)
                })
                .collect();
            return Ok(pick(found, &breadcrumb));
        }
        let tiers = candidate_words(text);
        // The code-like words tried, for the answer when nothing matches.
        let tried: Vec<String> = tiers[..2].concat();
        for tier in tiers {
            for word in tier {
                let found: Vec<_> = self
                    .symbols_shown(&word, sides)
                    .await?
                    .into_iter()
                    .filter(|(_, _, s)| !STATEMENTS.contains(&s.kind.as_str()))
                    .collect();
                if !found.is_empty() {
                    return Ok(pick(found, &word));
                }
            }
        }
        // No symbol named in the question: the hybrid search's best answer.
        let mut options = self.search_defaults.clone();
        options.filter = Default::default();
        options.filter.repositories = sides.repositories();
        options.filter.git_ref = git_ref.map(str::to_string);
        let answer = self.search_with(caller, text, options).await?;
        match answer.response.results.first() {
            Some(hit) => {
                // A hit on a ref names its repository: its rows are the ref's or the
                // repository's, as the side reads the file.
                let holder = sides
                    .of(&hit.repo_id)
                    .map_or(hit.repo_id.as_str(), |s| s.holder(&hit.path));
                let found: Vec<_> = meta
                    .symbols_by_id(holder, std::slice::from_ref(&hit.chunk.id))
                    .await?
                    .into_iter()
                    .map(|(path, s)| (holder.to_string(), path, s))
                    .collect();
                let (seeds, _) = pick(found, &hit.breadcrumb);
                let how = format!(
                    "No symbol is named in the question; scouting from the best search \
                     result, `{}` ({}, {}:{}).",
                    hit.breadcrumb, hit.kind, hit.path, hit.start_line
                );
                Ok((seeds, how))
            }
            None => {
                let named = if tried.is_empty() {
                    "No symbol is named in the question".to_string()
                } else {
                    format!(
                        "No indexed symbol is named {}",
                        tried
                            .iter()
                            .map(|w| format!("`{w}`"))
                            .collect::<Vec<_>>()
                            .join(" or ")
                    )
                };
                Ok((
                    Vec::new(),
                    format!(
                        "{named} (in the repositories this caller sees) and the search found \
                         nothing relevant: name the symbol (`symbol = path/file.ts > Name`)."
                    ),
                ))
            }
        }
    }
}

impl Service {
    /// The symbols named `name` that `sides` show: (row id, path, symbol).
    async fn symbols_shown(
        &self,
        name: &str,
        sides: &Sides,
    ) -> Result<Vec<(String, String, SymbolRecord)>, ServiceError> {
        let found = self
            .indexer
            .meta()
            .symbols_named(name, &sides.ids())
            .await?;
        Ok(found
            .into_iter()
            .filter(|(holder, path, _)| sides.shows(holder, path))
            .collect())
    }
}

/// Checks the request (the field named in the error) and applies defaults.
fn validate(
    text: String,
    tags: Vec<String>,
    budget: Option<u32>,
    repositories: &[String],
) -> Result<ScoutQuery, ServiceError> {
    use crate::store::{MAX_FILTER_ENTRIES, MAX_FILTER_ENTRY_BYTES};
    // Checked before any name is looked up (a list of 60,000 took 3.7 s a request).
    if repositories.len() > MAX_FILTER_ENTRIES
        || repositories
            .iter()
            .any(|r| r.len() > MAX_FILTER_ENTRY_BYTES)
    {
        return Err(ServiceError::invalid(
            "repositories",
            format!(
                "`repositories` takes at most {MAX_FILTER_ENTRIES} names of at most \
                 {MAX_FILTER_ENTRY_BYTES} bytes"
            ),
        ));
    }
    if text.trim().is_empty() {
        return Err(ServiceError::invalid(
            "query",
            "`query` must say what to scout: a symbol name, `symbol = path > Name`, or a \
             question that names one",
        ));
    }
    if text.len() > MAX_QUERY_BYTES {
        return Err(ServiceError::invalid(
            "query",
            format!("`query` is longer than {MAX_QUERY_BYTES} bytes"),
        ));
    }
    if tags.len() > MAX_TAGS || tags.iter().any(|t| t.is_empty() || t.len() > 64) {
        return Err(ServiceError::invalid(
            "tags",
            format!("`tags` takes at most {MAX_TAGS} tags of 1 to 64 bytes"),
        ));
    }
    let budget = budget.unwrap_or(DEFAULT_BUDGET);
    if !(1..=MAX_BUDGET).contains(&budget) {
        return Err(ServiceError::invalid(
            "budget",
            format!("`budget` must be between 1 and {MAX_BUDGET}, got {budget}"),
        ));
    }
    Ok(ScoutQuery { text, tags, budget })
}

/// The words of a question that may name a symbol, most code-like first: identifiers
/// with inner capitals, underscores or digits (`parseConfig`, `LLM_KIND`), then
/// capitalised words after the first (`Kind`), then the other words of 3+ letters.
fn candidate_words(text: &str) -> Vec<Vec<String>> {
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .filter(|w| w.chars().any(char::is_alphabetic))
        .collect();
    let mut tiers: Vec<Vec<String>> = vec![Vec::new(), Vec::new(), Vec::new()];
    for (i, word) in words.iter().enumerate() {
        let inner_upper = word.chars().skip(1).any(char::is_uppercase);
        let tier = if inner_upper || word.contains('_') || word.chars().any(|c| c.is_ascii_digit())
        {
            0
        } else if i > 0 && word.starts_with(char::is_uppercase) {
            1
        } else if word.len() >= 3 {
            2
        } else {
            continue;
        };
        if !tiers[tier].iter().any(|w| w == word) {
            tiers[tier].push(word.to_string());
        }
    }
    tiers
}

/// The seeds among `found`: one symbol (all its declarations: overloads, merged
/// declarations share a file and breadcrumb), or none when different symbols share the
/// name, with the candidates in the interpretation.
fn pick(found: Vec<(String, String, SymbolRecord)>, asked: &str) -> (Vec<Node>, String) {
    let mut groups: BTreeMap<(String, String, String), Vec<Node>> = BTreeMap::new();
    for (repo, path, s) in found {
        let key = (repo.clone(), path.clone(), s.breadcrumb.clone());
        groups.entry(key).or_default().push(node(&repo, &path, &s));
    }
    match groups.len() {
        0 => (
            Vec::new(),
            format!(
                "No indexed symbol is named `{asked}` (see `symbol = …` lookups to find the \
                 exact name)."
            ),
        ),
        1 => {
            let seeds = groups.into_values().next().unwrap_or_default();
            let how = seeds.first().map_or_else(String::new, |s| {
                format!("Matched {} `{}` at {}.", s.kind, s.breadcrumb, s.location())
            });
            (seeds, how)
        }
        _ => {
            let listed: Vec<String> = groups
                .values()
                .filter_map(|g| g.first())
                .map(|s| format!("`symbol = {} > {}` ({})", s.path, s.breadcrumb, s.kind))
                .collect();
            (
                Vec::new(),
                format!(
                    "`{asked}` is ambiguous: {} symbols have that name. Scout one of them: {}.",
                    listed.len(),
                    listed.join(", ")
                ),
            )
        }
    }
}

fn node(repo: &str, path: &str, s: &SymbolRecord) -> Node {
    Node {
        repo_id: repo.to_string(),
        chunk_id: s.chunk_id.clone(),
        path: path.to_string(),
        name: s.name.clone(),
        breadcrumb: s.breadcrumb.clone(),
        kind: s.kind.clone(),
        signature: s.signature.clone(),
        start_line: s.start_line,
        end_line: s.end_line,
        parent: s.parent_chunk_id.clone(),
    }
}

/// The symbol graph as the stores hold it, each repository as its side shows it: on a
/// tracked ref, a symbol's neighbours are read from the ref's rows and the repository's
/// (the files the ref does not hold).
struct StoreGraph<'a> {
    meta: &'a dyn MetaStore,
    vectors: &'a dyn VectorStore,
    sides: &'a Sides,
}

/// The relation an edge into a node stands for (`None`: not a dependency).
fn relation(kind: EdgeKind) -> Option<Relation> {
    Some(match kind {
        EdgeKind::Calls => Relation::Calls,
        EdgeKind::References => Relation::References,
        EdgeKind::Extends => Relation::Extends,
        EdgeKind::Implements => Relation::Implements,
        EdgeKind::Type | EdgeKind::ParamType | EdgeKind::ReturnType => Relation::UsesType,
        EdgeKind::Imports => return None,
    })
}

/// Which relation of several between the same two symbols is listed: the strongest.
fn strength(r: Relation) -> u8 {
    match r {
        Relation::Overrides => 0,
        Relation::Implements => 1,
        Relation::Extends => 2,
        Relation::Calls => 3,
        Relation::UsesType => 4,
        Relation::References => 5,
        Relation::Imports => 6,
    }
}

/// How many barrels deep re-export chains are followed.
const MAX_BARRELS: usize = 8;

impl StoreGraph<'_> {
    /// The import and re-export statements that reach `node`'s file, directly or
    /// through barrels (`export * from …`, `export { name } from …`), nearest first.
    async fn imports_through_barrels(
        &self,
        repo: &str,
        node: &Node,
    ) -> Result<Vec<(String, Relation, Option<i64>, bool)>, StoreError> {
        let mut out = Vec::new();
        let mut targets = vec![node.path.clone()];
        let mut seen = std::collections::HashSet::from([node.path.clone()]);
        for _ in 0..MAX_BARRELS {
            let mut next = Vec::new();
            for target in &targets {
                let edges = self.meta.imports_of(repo, target).await?;
                let ids: Vec<String> = edges.iter().map(|(_, e)| e.from_chunk.clone()).collect();
                let kinds: HashMap<String, String> = self
                    .meta
                    .symbols_by_id(repo, &ids)
                    .await?
                    .into_iter()
                    .map(|(_, s)| (s.chunk_id, s.kind))
                    .collect();
                for (file, e) in edges {
                    let barrel = kinds.get(&e.from_chunk).is_some_and(|k| k == "re-export");
                    if barrel && seen.insert(file.clone()) {
                        next.push(file);
                    }
                    out.push((e.from_chunk, Relation::Imports, e.line, e.certain));
                }
            }
            if next.is_empty() {
                break;
            }
            targets = next;
        }
        Ok(out)
    }
}

#[async_trait]
impl ScoutGraph for StoreGraph<'_> {
    type Error = StoreError;

    async fn links(&self, node: &Node, depth: u32) -> Result<Vec<Link>, StoreError> {
        let holders = match self.sides.of(&node.repo_id) {
            Some(side) => side.holders(),
            None => vec![node.repo_id.as_str()],
        };
        let mut links = Vec::new();
        for holder in holders {
            links.extend(
                self.links_in(holder, node, depth)
                    .await?
                    .into_iter()
                    .filter(|l| self.sides.shows(holder, &l.neighbour.path)),
            );
        }
        links.sort_by_key(|l| strength(l.relation));
        Ok(links)
    }
}

impl StoreGraph<'_> {
    /// The links into `node` that the rows of `repo` hold.
    async fn links_in(&self, repo: &str, node: &Node, depth: u32) -> Result<Vec<Link>, StoreError> {
        // (neighbour chunk id, relation, line, certain)
        let mut raw: Vec<(String, Relation, Option<i64>, bool)> = Vec::new();
        for e in self.meta.edges_to(repo, &node.chunk_id).await? {
            if e.from_chunk == node.chunk_id {
                continue;
            }
            if let Some(r) = relation(e.kind) {
                raw.push((e.from_chunk, r, e.line, e.certain));
            }
        }
        // A member's overrides: the same name in a subclass or an implementation of its
        // class or interface.
        if let Some(parent) = &node.parent
            && matches!(node.kind.as_str(), "method" | "property")
        {
            let heirs: Vec<String> = self
                .meta
                .edges_to(repo, parent)
                .await?
                .into_iter()
                .filter(|e| matches!(e.kind, EdgeKind::Extends | EdgeKind::Implements))
                .map(|e| e.from_chunk)
                .collect();
            for (path, heir) in self.meta.symbols_by_id(repo, &heirs).await? {
                for member in self.meta.file_symbols(repo, &path).await? {
                    if member.parent_chunk_id.as_deref() == Some(heir.chunk_id.as_str())
                        && member.name == node.name
                    {
                        raw.push((member.chunk_id, Relation::Overrides, None, true));
                    }
                }
            }
        }
        raw.sort_by_key(|(_, r, _, _)| strength(*r));
        // Next to the symbol: the statements that import or re-export its file, and
        // through re-exports (barrels) the files that import those, and so on.
        if depth == 0 {
            raw.extend(self.imports_through_barrels(repo, node).await?);
        }
        let ids: Vec<String> = raw.iter().map(|(id, ..)| id.clone()).collect();
        let symbols: HashMap<String, (String, SymbolRecord)> = self
            .meta
            .symbols_by_id(repo, &ids)
            .await?
            .into_iter()
            .map(|(path, s)| (s.chunk_id.clone(), (path, s)))
            .collect();
        let sources: HashMap<String, String> = self
            .vectors
            .get(repo, &ids)
            .await?
            .into_iter()
            .map(|row| {
                let source = crate::text::truncate_chars(&row.chunk.full_source, MAX_SOURCE_CHARS);
                (row.chunk.id, source)
            })
            .collect();
        let mut links = Vec::new();
        for (id, relation, line, certain) in raw {
            let Some((path, symbol)) = symbols.get(&id) else {
                continue;
            };
            // An import of the file that does not name the symbol (nor re-exports
            // everything) does not depend on it.
            let source = sources.get(&id).cloned().unwrap_or_default();
            if relation == Relation::Imports
                && !(source.contains(&node.name) || source.contains('*'))
            {
                continue;
            }
            links.push(Link {
                neighbour: self::node(repo, path, symbol),
                relation,
                node: node.clone(),
                line,
                certain,
                source,
                depth,
            });
        }
        Ok(links)
    }
}
