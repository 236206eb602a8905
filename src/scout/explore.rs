//! The exploration loop: breadth first from the seeds, each explored node's links rated
//! in one batch, each link expanded by [`should_expand`], within the budget.

use std::collections::{HashSet, VecDeque};

use async_trait::async_trait;

use super::{ExpandRule, Link, Node, Rater, ScoutQuery, VisitedNode, should_expand};

/// Where Scout finds a node's links (the service implements it over the stores).
#[async_trait]
pub trait ScoutGraph: Send + Sync {
    /// What a lookup can fail with.
    type Error: Send;

    /// The links of `node` (explored at `depth`): who calls, references, extends,
    /// implements, overrides or imports it.
    async fn links(&self, node: &Node, depth: u32) -> Result<Vec<Link>, Self::Error>;
}

/// What one exploration visited.
#[derive(Debug, Clone, PartialEq)]
pub struct Exploration {
    /// Every rated link, in the order it was rated.
    pub visited: Vec<VisitedNode>,
    /// Nodes explored (seeds included).
    pub nodes_visited: u32,
    /// Budget left.
    pub budget_remaining: u32,
}

/// Explores from `seeds` (depth 0). The budget is the most nodes explored, seeds
/// included: a link is expanded only while explored plus queued nodes stay within it
/// (the seed's loop spends budget when it queues a node; counting the seeds too makes
/// `budget` exactly the number of nodes whose links are fetched). A node is explored
/// once, and a link to a node already seen is rated once; cycles end there.
/// `on_visit` sees each rated link as it is rated (for progress).
pub async fn explore<G>(
    query: &ScoutQuery,
    seeds: Vec<Node>,
    graph: &G,
    rater: &dyn Rater,
    rule: &ExpandRule,
    mut on_visit: impl FnMut(&VisitedNode, u32) + Send,
) -> Result<Exploration, G::Error>
where
    G: ScoutGraph + ?Sized,
{
    let key = |n: &Node| (n.repo_id.clone(), n.chunk_id.clone());
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut frontier: VecDeque<(Node, u32)> = VecDeque::new();
    for seed in seeds {
        if frontier.len() < query.budget as usize && seen.insert(key(&seed)) {
            frontier.push_back((seed, 0));
        }
    }
    let mut visited = Vec::new();
    let mut explored = 0u32;
    while let Some((node, depth)) = frontier.pop_front() {
        explored += 1;
        let mut links = graph.links(&node, depth).await?;
        // One rating per neighbour: the first link found (the graph lists the strongest
        // relation first).
        let mut here = HashSet::new();
        links.retain(|l| here.insert(key(&l.neighbour)) && !seen.contains(&key(&l.neighbour)));
        let breadth = links.len() as u32;
        let ratings = rater.rate(query, &links).await;
        for (link, rating) in links.into_iter().zip(ratings) {
            let queued = frontier.len() as u32;
            let remaining = query.budget.saturating_sub(explored + queued);
            let expanded =
                should_expand(rule, &rating.rubric, &query.tags, depth, breadth, remaining);
            seen.insert(key(&link.neighbour));
            if expanded {
                frontier.push_back((link.neighbour.clone(), depth + 1));
            }
            let visit = VisitedNode {
                link,
                rubric: rating.rubric,
                action: rating.action,
                expanded,
            };
            on_visit(&visit, explored);
            visited.push(visit);
        }
    }
    Ok(Exploration {
        visited,
        nodes_visited: explored,
        budget_remaining: query.budget.saturating_sub(explored),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::scout::{Relation, StructuralRater};

    /// A graph in memory: `callers[x]` call `x`.
    struct Calls(HashMap<&'static str, Vec<&'static str>>);

    fn node(name: &str) -> Node {
        Node {
            repo_id: "r".into(),
            chunk_id: name.into(),
            path: format!("src/{name}.ts"),
            name: name.into(),
            breadcrumb: name.into(),
            kind: "function".into(),
            signature: String::new(),
            start_line: 1,
            end_line: 3,
            parent: None,
        }
    }

    #[async_trait]
    impl ScoutGraph for Calls {
        type Error = ();

        async fn links(&self, n: &Node, depth: u32) -> Result<Vec<Link>, ()> {
            Ok(self
                .0
                .get(n.name.as_str())
                .into_iter()
                .flatten()
                .map(|caller| Link {
                    neighbour: node(caller),
                    relation: Relation::Calls,
                    node: n.clone(),
                    line: None,
                    certain: true,
                    source: String::new(),
                    depth,
                })
                .collect())
        }
    }

    fn query(budget: u32) -> ScoutQuery {
        ScoutQuery {
            text: "f".into(),
            tags: vec![],
            budget,
        }
    }

    #[tokio::test]
    async fn the_budget_bounds_the_nodes_explored_and_cycles_end() {
        // f ← a ← b ← c ← d ← e, and a cycle: f ← g ← f.
        let graph = Calls(HashMap::from([
            ("f", vec!["a", "g"]),
            ("a", vec!["b"]),
            ("b", vec!["c"]),
            ("c", vec!["d"]),
            ("d", vec!["e"]),
            ("g", vec!["f"]),
        ]));
        let rule = ExpandRule::default();
        let run = |budget| {
            let graph = &graph;
            let rule = &rule;
            async move {
                explore(
                    &query(budget),
                    vec![node("f")],
                    graph,
                    &StructuralRater,
                    rule,
                    |_, _| {},
                )
                .await
                .unwrap()
            }
        };
        let all = run(20).await;
        // Call sites next to `f` score 15.5, further out risk 2: 8 + 3 + 2.5 - 0.5 -
        // 2·depth, so b, c are expanded (depth 1, 2) and d is rated but not expanded.
        let names: Vec<(&str, bool)> = all
            .visited
            .iter()
            .map(|v| (v.link.neighbour.name.as_str(), v.expanded))
            .collect();
        assert_eq!(
            names,
            [
                ("a", true),
                ("g", true),
                ("b", true),
                ("c", true),
                ("d", false)
            ]
        );
        assert_eq!(all.nodes_visited, 5, "f, a, g, b, c");
        assert_eq!(all.budget_remaining, 15);
        // With a budget of 2, only f and one more node are explored.
        let small = run(2).await;
        assert_eq!(small.nodes_visited, 2);
        assert_eq!(small.budget_remaining, 0);
        assert_eq!(small.visited.iter().filter(|v| v.expanded).count(), 1);
    }
}
