//! The answer without a model: a summary paragraph, the locations that must change with
//! their actions, what is worth a look, and what was safely ignored and why.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::{Exploration, Node, Pointer, Relation, Risk, ScoutMeta, ScoutResponse, VisitedNode};

/// What a relation reads as in a pointer (`calls`, `switches over`…).
fn phrase(visit: &VisitedNode) -> &'static str {
    let tags = &visit.rubric.tags;
    if tags.iter().any(|t| t == "record") {
        return "is keyed by";
    }
    if tags.iter().any(|t| t == "pattern-match") {
        return "switches over";
    }
    match visit.link.relation {
        Relation::Calls => "calls",
        Relation::References => "references",
        Relation::Extends => "extends",
        Relation::Implements => "implements",
        Relation::UsesType => "uses the type",
        Relation::Overrides => "overrides",
        Relation::Imports => "imports the file of",
    }
}

fn pointer(visit: &VisitedNode) -> Pointer {
    let n = &visit.link.neighbour;
    Pointer {
        location: visit.link.location(),
        what: format!(
            "`{}` ({}) {} `{}`",
            n.breadcrumb,
            n.kind,
            phrase(visit),
            visit.link.node.breadcrumb
        ),
        action: visit.action.clone(),
        risk: Risk::of(&visit.rubric),
        tags: visit.rubric.tags.clone(),
    }
}

/// Why the low-risk links could be ignored, by their first tag.
fn why_ignored(tag: &str) -> &'static str {
    match tag {
        "import" => "imports name the symbol without depending on its shape",
        "re-export" => "re-exports pass it on unchanged",
        "type-only" => "they only mention the type",
        "call-site" => "callers further out change only if their callee's behaviour does",
        _ => "they are further from the symbol",
    }
}

/// The response for `seeds` and what exploring from them visited. `interpretation`
/// says what the query was taken to mean.
pub fn synthesize(
    seeds: &[Node],
    exploration: &Exploration,
    interpretation: String,
) -> ScoutResponse {
    let mut pointers: Vec<(u32, Pointer)> = exploration
        .visited
        .iter()
        .filter(|v| Risk::of(&v.rubric) >= Risk::Medium)
        .map(|v| (v.link.depth, pointer(v)))
        .collect();
    // Most risky first, then nearest, then by place.
    pointers.sort_by(|(da, a), (db, b)| {
        b.risk
            .cmp(&a.risk)
            .then(da.cmp(db))
            .then_with(|| a.location.cmp(&b.location))
    });
    let pointers: Vec<Pointer> = pointers.into_iter().map(|(_, p)| p).collect();
    let mut ignored: BTreeMap<String, usize> = BTreeMap::new();
    for v in exploration
        .visited
        .iter()
        .filter(|v| Risk::of(&v.rubric) == Risk::Low)
    {
        let tag = v
            .rubric
            .tags
            .first()
            .cloned()
            .unwrap_or_else(|| "other".into());
        *ignored.entry(tag).or_default() += 1;
    }
    let summary = summary(seeds, exploration, &interpretation, &pointers, &ignored);
    ScoutResponse {
        summary,
        pointers,
        meta: ScoutMeta {
            nodes_visited: exploration.nodes_visited,
            links_rated: exploration.visited.len() as u32,
            budget_remaining: exploration.budget_remaining,
            interpretation,
        },
    }
}

/// The answer in words: what the subject is, how many places must change, are worth a
/// look or were safely ignored, then those places by section.
fn summary(
    seeds: &[Node],
    exploration: &Exploration,
    interpretation: &str,
    pointers: &[Pointer],
    ignored: &BTreeMap<String, usize>,
) -> String {
    let high = pointers.iter().filter(|p| p.risk == Risk::High).count();
    let medium = pointers.len() - high;
    let low: usize = ignored.values().sum();

    let mut summary = String::new();
    let subject = match seeds {
        [] => "Nothing".to_string(),
        [one] => format!("`{}` ({}, {})", one.breadcrumb, one.kind, one.location()),
        many => format!(
            "{} symbols named `{}`",
            many.len(),
            many.first().map_or("", |s| s.name.as_str())
        ),
    };
    if seeds.is_empty() {
        summary.push_str(interpretation);
    } else if exploration.visited.is_empty() {
        let _ = write!(
            summary,
            "{subject}: nothing in the indexed code calls, references, extends, implements \
             or imports it, so a change to it breaks no other symbol that Sextant can see."
        );
    } else {
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let _ = write!(
            summary,
            "{subject}: {} must change with it",
            plural(high, "place", "places")
        );
        if medium > 0 {
            let _ = write!(
                summary,
                ", {} worth a look",
                plural(medium, "more is", "more are")
            );
        }
        if low > 0 {
            let _ = write!(
                summary,
                "; {} safely ignored",
                plural(low, "link was", "links were")
            );
        }
        let _ = write!(
            summary,
            " ({} explored, {} rated).",
            plural(exploration.nodes_visited as usize, "node", "nodes"),
            plural(exploration.visited.len(), "link", "links"),
        );
    }
    let section = |summary: &mut String, title: &str, risk: Risk| {
        let items: Vec<&Pointer> = pointers.iter().filter(|p| p.risk == risk).collect();
        if items.is_empty() {
            return;
        }
        let _ = write!(summary, "\n\n**{title}**\n");
        for p in items {
            let _ = write!(summary, "\n- {} — {}", p.location, p.what);
            if let Some(action) = &p.action {
                let _ = write!(summary, ": {action}");
            }
        }
    };
    section(&mut summary, "Must change", Risk::High);
    section(&mut summary, "Worth a look", Risk::Medium);
    if !ignored.is_empty() {
        summary.push_str("\n\n**Safe to ignore**\n");
        for (tag, n) in ignored {
            let _ = write!(summary, "\n- {n} × {tag}: {}", why_ignored(tag));
        }
    }
    summary
}
