//! The connection graph (blueprint phase 5): one entry per result with kind, modifiers,
//! reference count, signature, type hierarchy, members, calls, callers and type flows;
//! `★` on symbols that are results, `◆` on symbols outside the results that 2+ results
//! depend on, listed again under "Shared dependencies not in results"; and the summary
//! line with the token count of the whole response. Pure data → text.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::thousands;
use crate::graph::{SymbolMetadata, SymbolRef};
use crate::text::Tokenizer;

/// Most symbols listed on one line before `+N more`.
const MAX_LIST: usize = 8;

/// Everything the connection graph shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GraphInput<'a> {
    /// The query as asked.
    pub query: String,
    /// The token budget.
    pub token_budget: usize,
    /// Tokens of the rest of the response (the snapshots), so that the summary counts
    /// the whole response.
    #[serde(default)]
    pub snapshot_tokens: usize,
    /// The encoding the summary counts in.
    #[serde(default)]
    pub tokenizer: Tokenizer,
    /// Result symbols in result order, with their metadata (borrowed from the response
    /// when an answer is rendered again and again while it is fitted to its budget).
    pub results: Cow<'a, [SymbolMetadata]>,
}

/// The identity of a referenced symbol: its chunk id, or its name when external.
fn key(r: &SymbolRef) -> String {
    r.id.clone().unwrap_or_else(|| format!("name:{}", r.name))
}

/// How results depend on a symbol outside the results.
#[derive(Debug, Default)]
struct Shared {
    symbol: Option<SymbolRef>,
    /// Result indices that depend on it, with how.
    uses: BTreeMap<usize, HashSet<&'static str>>,
}

/// The dependencies (outgoing lists) of a result, labelled by relation.
fn dependencies(m: &SymbolMetadata) -> impl Iterator<Item = (&'static str, &SymbolRef)> {
    m.extends
        .iter()
        .map(|r| ("parent", r))
        .chain(m.implements.iter().map(|r| ("parent", r)))
        .chain(m.calls.iter().map(|r| ("call", r)))
        .chain(m.types_in.iter().map(|r| ("type", r)))
        .chain(m.types_out.iter().map(|r| ("return", r)))
        .chain(m.types_used.iter().map(|r| ("type", r)))
}

struct Marks {
    results: HashSet<String>,
    shared: HashSet<String>,
    single: bool,
}

impl Marks {
    fn format(&self, r: &SymbolRef) -> String {
        let k = key(r);
        if !self.single && self.results.contains(&k) {
            format!("{} ★", r.name)
        } else if !self.single && self.shared.contains(&k) {
            format!("{} ◆", r.name)
        } else {
            match &r.path {
                Some(p) => format!("{} ({p})", r.name),
                None => r.name.clone(),
            }
        }
    }

    fn list(&self, refs: &[SymbolRef]) -> String {
        let mut out: Vec<String> = refs.iter().take(MAX_LIST).map(|r| self.format(r)).collect();
        if refs.len() > MAX_LIST {
            out.push(format!("+{} more", refs.len() - MAX_LIST));
        }
        out.join(", ")
    }
}

fn is_value_kind(kind: &str) -> bool {
    matches!(
        kind,
        "const" | "variable" | "property" | "type" | "interface" | "enum"
    )
}

fn entry(m: &SymbolMetadata, marks: &Marks) -> String {
    let mut head: Vec<&str> = m
        .modifiers
        .iter()
        .map(String::as_str)
        .filter(|x| !matches!(*x, "exported" | "default") && *x != m.kind)
        .collect();
    head.push(&m.kind);
    let mut facts = vec![head.join(" ")];
    if m.exported {
        facts.push("exported".into());
    }
    match m.reference_count() {
        0 => {}
        1 => facts.push("refs: 1 file".into()),
        n => facts.push(format!("refs: {n} files")),
    }
    let mut lines = vec![
        m.name.clone(),
        format!(" {}", m.path),
        format!(" {}", facts.join(" | ")),
    ];
    // Class-like heads are their heritage, which the Extends/Implements lines give.
    let class_like = matches!(
        m.kind.as_str(),
        "class" | "interface" | "enum" | "namespace" | "module" | "component"
    );
    if !class_like && !m.signature.is_empty() && m.signature != m.name {
        lines.push(format!(" Signature: {}", m.signature));
    }
    let push = |lines: &mut Vec<String>, label: &str, refs: &[SymbolRef]| {
        if !refs.is_empty() {
            lines.push(format!(" {label}: {}", marks.list(refs)));
        }
    };
    push(&mut lines, "Extends", &m.extends);
    push(&mut lines, "Implements", &m.implements);
    push(&mut lines, "Subtypes", &m.subtypes);
    if !m.members.is_empty() {
        let mut members: Vec<String> = m.members.iter().take(MAX_LIST * 2).cloned().collect();
        if m.members.len() > MAX_LIST * 2 {
            members.push(format!("+{} more", m.members.len() - MAX_LIST * 2));
        }
        lines.push(format!(" Members: {}", members.join(", ")));
    }
    push(&mut lines, "Calls", &m.calls);
    push(&mut lines, "Mentions", &m.mentions);
    if is_value_kind(&m.kind) {
        let mut users = m.callers.clone();
        users.extend(m.used_by.iter().cloned());
        push(&mut lines, "Used by", &users);
    } else {
        push(&mut lines, "Called by", &m.callers);
        push(&mut lines, "Used by", &m.used_by);
    }
    let types_in = marks.list(&m.types_in);
    let types_out = marks.list(&m.types_out);
    let types = match (types_in.is_empty(), types_out.is_empty()) {
        (true, true) => None,
        (false, true) => Some(format!(" Types in: {types_in}")),
        (true, false) => Some(format!(" Types out: {types_out}")),
        (false, false) => Some(format!(" Types in: {types_in} | Types out: {types_out}")),
    };
    lines.extend(types);
    lines.join("\n")
}

fn describe(uses: &BTreeMap<usize, HashSet<&'static str>>, results: &[SymbolMetadata]) -> String {
    let all = |rel: &str| uses.values().all(|u| u.len() == 1 && u.contains(rel));
    let n = uses.len();
    let m = results.len();
    if all("parent") {
        let children: Vec<&str> = uses.keys().map(|&i| results[i].name.as_str()).collect();
        format!("parent type of {}", children.join(", "))
    } else if all("call") {
        format!("called by {n}/{m} results")
    } else if all("return") {
        format!("return type for {n}/{m} results")
    } else if uses
        .values()
        .all(|u| u.iter().all(|r| matches!(*r, "type" | "return")))
    {
        format!("type used by {n}/{m} results")
    } else {
        format!("used by {n}/{m} results")
    }
}

fn summary(input: &GraphInput, tokens: usize) -> String {
    let files: HashSet<&str> = input.results.iter().map(|m| m.path.as_str()).collect();
    let count = match input.results.len() {
        0 => "no results".to_string(),
        1 => "1 result".to_string(),
        n if files.len() == 1 => format!("{n} results in 1 file"),
        n => format!("{n} results across {} files", files.len()),
    };
    format!(
        "Search: \"{}\" | {count} | {}/{} tokens",
        input.query,
        thousands(tokens),
        thousands(input.token_budget)
    )
}

/// Everything after the summary line.
fn body(input: &GraphInput) -> String {
    let results = &input.results;
    if results.is_empty() {
        return "No indexed code matched this query in scope. Try other words, a wider path \
                filter, or `symbol = Name` for an exact lookup."
            .to_string();
    }
    let result_keys: HashSet<String> = results.iter().map(|m| m.id.clone()).collect();
    let mut shared: HashMap<String, Shared> = HashMap::new();
    for (i, m) in results.iter().enumerate() {
        for (relation, r) in dependencies(m) {
            let k = key(r);
            if result_keys.contains(&k) {
                continue;
            }
            let s = shared.entry(k).or_default();
            s.symbol.get_or_insert_with(|| r.clone());
            s.uses.entry(i).or_default().insert(relation);
        }
    }
    shared.retain(|_, s| s.uses.len() >= 2);
    let marks = Marks {
        results: result_keys,
        shared: shared.keys().cloned().collect(),
        single: results.len() == 1,
    };
    if marks.single {
        return entry(&results[0], &marks);
    }
    let entries: Vec<String> = results
        .iter()
        .enumerate()
        .map(|(i, m)| format!("[{}] {}", i + 1, entry(m, &marks)))
        .collect();
    let mut out = entries.join("\n\n");
    let marked = out.contains('★') || out.contains('◆');
    if marked {
        out.push_str("\n\n★ = in results  ◆ = shared across 2+ results");
    }
    if !shared.is_empty() {
        let mut rows: Vec<&Shared> = shared.values().collect();
        rows.sort_by(|a, b| {
            b.uses
                .len()
                .cmp(&a.uses.len())
                .then_with(|| a.symbol.cmp(&b.symbol))
        });
        out.push_str("\n\nShared dependencies not in results:");
        for s in rows {
            let Some(symbol) = &s.symbol else { continue };
            let name = match &symbol.path {
                Some(p) => format!("{} ({p})", symbol.name),
                None => symbol.name.clone(),
            };
            out.push_str(&format!("\n {name} — {}", describe(&s.uses, results)));
        }
    }
    out
}

/// The connection graph text. The summary's token count is that of the graph itself plus
/// `snapshot_tokens` (the whole response), found as a fixed point since the count is part
/// of what it counts; where the digits' own tokens make the count swing between two
/// values, the higher one is stated, so the summary never says less than the answer holds.
pub fn render(input: &GraphInput) -> String {
    render_counted(input).0
}

/// [`render`]'s text and its own tokens (the graph's, without `snapshot_tokens`), which
/// rendering counts anyway.
pub fn render_counted(input: &GraphInput) -> (String, usize) {
    let rest = format!("\n\n{}", body(input));
    // The summary line ends in a word, where every encoding's pattern ends a piece and
    // the line breaks start the next: the text's count is the summary's plus the rest's,
    // and only the summary is counted again as the total changes.
    let rest_tokens = input.tokenizer.count(&rest);
    let counted = |total: usize| {
        let line = summary(input, total);
        let own = input.tokenizer.count(&line) + rest_tokens;
        (format!("{line}{rest}"), own)
    };
    let mut total = input.snapshot_tokens + rest_tokens;
    // The smallest stated total seen that is at least what its text holds.
    let mut best: Option<(usize, (String, usize))> = None;
    for _ in 0..8 {
        let (text, own) = counted(total);
        let n = input.snapshot_tokens + own;
        if n <= total && best.as_ref().is_none_or(|(t, _)| total < *t) {
            best = Some((total, (text, own)));
        }
        if n == total {
            break;
        }
        total = n;
    }
    match best {
        Some((_, rendered)) => rendered,
        // Never settled from below: state a total over every count seen.
        None => counted(total + 8),
    }
}
