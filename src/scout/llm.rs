//! The optional LLM rater and synthesis: the seed's rating and synthesis prompts sent to
//! a chat model (any OpenAI-compatible endpoint, behind [`Chat`]), its JSON validated.
//! A batch whose answer is not valid is asked once more; if that fails too, its links get
//! the structural rating with `confidence = 1`. The synthesis falls back to the
//! deterministic one.

use async_trait::async_trait;
use serde::Deserialize;

use super::rater::{Rating, rate_link};
use super::{Exploration, Link, Node, Rater, Rubric, ScoutQuery, ScoutResponse, synthesize};

/// A chat model: one prompt in, its text out (the error says why, for logs).
#[async_trait]
pub trait Chat: Send + Sync {
    /// The model's answer to `prompt`.
    async fn complete(&self, prompt: &str) -> Result<String, String>;
}

/// Links rated per request.
pub const LLM_BATCH: usize = 10;

/// Rates with a chat model, batch by batch.
pub struct LlmRater<'a> {
    chat: &'a dyn Chat,
}

impl<'a> LlmRater<'a> {
    /// A rater asking `chat`.
    pub fn new(chat: &'a dyn Chat) -> Self {
        Self { chat }
    }
}

#[async_trait]
impl Rater for LlmRater<'_> {
    async fn rate(&self, query: &ScoutQuery, links: &[Link]) -> Vec<Rating> {
        let mut out = Vec::with_capacity(links.len());
        for batch in links.chunks(LLM_BATCH) {
            let prompt = rating_prompt(query, batch);
            let mut rubrics = None;
            for _ in 0..2 {
                match self.chat.complete(&prompt).await {
                    Ok(text) => match parse_ratings(&text, batch.len(), &query.tags) {
                        Ok(r) => {
                            rubrics = Some(r);
                            break;
                        }
                        Err(why) => tracing::debug!(%why, "the model's ratings are not valid"),
                    },
                    Err(why) => tracing::warn!(%why, "the scout model did not answer"),
                }
            }
            for (i, link) in batch.iter().enumerate() {
                let structural = rate_link(link);
                out.push(match &rubrics {
                    Some(r) => {
                        let mut rubric = r[i].clone();
                        // The rater's own vocabulary stays, so the synthesis can say what
                        // kind of link it was.
                        for tag in structural.rubric.tags {
                            if !rubric.tags.contains(&tag) {
                                rubric.tags.push(tag);
                            }
                        }
                        let action = (rubric.risk >= 4).then_some(structural.action).flatten();
                        Rating { rubric, action }
                    }
                    None => {
                        let mut fallback = structural;
                        fallback.rubric.confidence = 1;
                        fallback
                    }
                });
            }
        }
        out
    }
}

/// The seed's rating prompt for one batch.
pub fn rating_prompt(query: &ScoutQuery, links: &[Link]) -> String {
    let mut prompt = format!(
        "Rate each link for relevance to the query.\n\nQuery: \"{}\"\nInterest tags: {:?}\n\n\
         Links to rate:\n",
        query.text, query.tags
    );
    for (i, link) in links.iter().enumerate() {
        let n = &link.neighbour;
        let snippet: String = link
            .source
            .lines()
            .take(12)
            .collect::<Vec<_>>()
            .join("\n    ");
        prompt.push_str(&format!(
            "{}. {} - {} `{}` ({}) {} `{}`\n    {}\n",
            i + 1,
            link.location(),
            n.kind,
            n.breadcrumb,
            n.signature,
            <&str>::from(link.relation),
            link.node.breadcrumb,
            snippet
        ));
    }
    prompt.push_str(
        "\nFor each link, output JSON:\n\
         {\"relevance\": 1-5, \"risk\": 1-5, \"complexity\": 1-5, \"confidence\": 1-5, \"tags\": [...]}\n\n\
         Answer with one JSON array holding one such object per link, in order. \
         Only include tags from the provided list that actually apply.",
    );
    prompt
}

#[derive(Deserialize)]
struct Rated {
    relevance: u8,
    risk: u8,
    complexity: u8,
    confidence: u8,
    #[serde(default)]
    tags: Vec<String>,
}

/// The model's answer as `expected` rubrics: a JSON array (possibly inside a code
/// fence or surrounded by text) of objects with every dimension in 1–5; tags outside
/// `allowed` are dropped.
pub fn parse_ratings(
    text: &str,
    expected: usize,
    allowed: &[String],
) -> Result<Vec<Rubric>, String> {
    let start = text.find('[').ok_or("no JSON array in the answer")?;
    let end = text.rfind(']').ok_or("no JSON array in the answer")?;
    let rated: Vec<Rated> = serde_json::from_str(text.get(start..=end).unwrap_or(""))
        .map_err(|e| format!("not an array of ratings: {e}"))?;
    if rated.len() != expected {
        return Err(format!("{} ratings for {expected} links", rated.len()));
    }
    rated
        .into_iter()
        .map(|r| {
            let dims = [r.relevance, r.risk, r.complexity, r.confidence];
            if dims.iter().any(|d| !(1..=5).contains(d)) {
                return Err(format!("a dimension outside 1-5: {dims:?}"));
            }
            Ok(Rubric {
                relevance: r.relevance,
                risk: r.risk,
                complexity: r.complexity,
                confidence: r.confidence,
                tags: r.tags.into_iter().filter(|t| allowed.contains(t)).collect(),
            })
        })
        .collect()
}

/// The seed's synthesis prompt.
pub fn synthesis_prompt(query: &ScoutQuery, exploration: &Exploration) -> String {
    let mut prompt = format!(
        "Summarize findings for: \"{}\"\n\nVisited nodes (with rubrics):\n",
        query.text
    );
    for v in &exploration.visited {
        let r = &v.rubric;
        prompt.push_str(&format!(
            "- {} `{}` ({}) {} `{}`: relevance {}, risk {}, complexity {}, confidence {}, \
             tags [{}]{}\n",
            v.link.location(),
            v.link.neighbour.breadcrumb,
            v.link.neighbour.kind,
            <&str>::from(v.link.relation),
            v.link.node.breadcrumb,
            r.relevance,
            r.risk,
            r.complexity,
            r.confidence,
            r.tags.join(", "),
            v.action
                .as_deref()
                .map(|a| format!("; action: {a}"))
                .unwrap_or_default()
        ));
    }
    prompt.push_str(
        "\nWrite:\n1. One-paragraph summary answering the query\n\
         2. Bullet list of high-risk locations with actions\n\
         3. What was safely ignored and why",
    );
    prompt
}

/// The deterministic response with the model's summary in place of the deterministic
/// one, when the model answers with something.
pub async fn synthesize_with(
    chat: &dyn Chat,
    query: &ScoutQuery,
    seeds: &[Node],
    exploration: &Exploration,
    interpretation: String,
) -> ScoutResponse {
    let mut response = synthesize(seeds, exploration, interpretation);
    if seeds.is_empty() {
        return response;
    }
    match chat.complete(&synthesis_prompt(query, exploration)).await {
        Ok(text) if !text.trim().is_empty() => response.summary = text.trim().to_string(),
        Ok(_) => tracing::debug!("the scout model's summary was empty"),
        Err(why) => tracing::warn!(%why, "the scout model did not summarise"),
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratings_are_validated() {
        let allowed = vec!["exhaustive".to_string()];
        let ok = "Here you go:\n```json\n[{\"relevance\": 4, \"risk\": 5, \"complexity\": 2, \
                  \"confidence\": 5, \"tags\": [\"exhaustive\", \"made-up\"]}]\n```";
        let r = parse_ratings(ok, 1, &allowed).unwrap();
        assert_eq!(
            (r[0].risk, r[0].tags.clone()),
            (5, vec!["exhaustive".to_string()])
        );
        assert!(
            parse_ratings(ok, 2, &allowed)
                .unwrap_err()
                .contains("1 ratings for 2")
        );
        assert!(parse_ratings("no idea", 1, &allowed).is_err());
        let out_of_range =
            "[{\"relevance\": 9, \"risk\": 5, \"complexity\": 2, \"confidence\": 5}]";
        assert!(
            parse_ratings(out_of_range, 1, &allowed)
                .unwrap_err()
                .contains("1-5")
        );
        let missing = "[{\"relevance\": 3}]";
        assert!(parse_ratings(missing, 1, &allowed).is_err());
    }
}
