//! The token budget as a ceiling on the whole answer (seed 003: `maxTokenBudget` is the
//! maximum tokens in the combined result output). The search stage picks results whose
//! source fits the budget by estimate; the rendered answer adds the connection graph,
//! snapshot headers, imports and notes. [`fit_content`] renders, counts everything in the
//! request's encoding ([`Tokenizer`]: the agent's own tokens, not an estimate), and
//! leaves results out from the lowest-ranked up until the answer fits, then takes back
//! the first few of those that still fit after all (a long result left out makes room
//! for shorter ones ranked below it); a best result that
//! does not fit alone is cut on a line boundary with a note, and as a last resort the
//! items themselves are cut.

#[cfg(test)]
use super::content_items;
use super::{ContentItem, FileChunks, Renderer};
use crate::search::SearchResponse;
use crate::text::Tokenizer;

/// Tokens of an answer: its items', plus one for each item's separator, so that the
/// answer printed as one text (the CLI's, items apart by a blank line) counts no more
/// either.
pub fn content_tokens(items: &[ContentItem], tokenizer: Tokenizer) -> usize {
    items.iter().map(|i| tokenizer.count(&i.text) + 1).sum()
}

/// The answer to `response` as content items within `response.token_budget` tokens of
/// `response.tokenizer`, and the response its results and `tokensUsed` now describe.
pub fn fit_content(
    mut response: SearchResponse,
    files: &FileChunks,
) -> (SearchResponse, Vec<ContentItem>) {
    let budget = response.token_budget;
    let tokenizer = response.tokenizer;
    let mut renderer = Renderer::new(files);
    let (mut items, mut used) = renderer.answer(&response);
    let mut renders = 1;
    // Lowest-ranked results out first, a few at a time when far over.
    let mut left_out = Vec::new();
    while used > budget && response.results.len() > 1 {
        let total = used;
        let per_result = total / response.results.len().max(1);
        let drop = ((total - budget) / per_result.max(1)).clamp(1, response.results.len() - 1);
        let keep = response.results.len() - drop;
        let hits = response.results.split_off(keep);
        let metadata = response
            .metadata
            .split_off(keep.min(response.metadata.len()));
        let mut metadata = metadata.into_iter();
        let mut dropped: Vec<_> = hits.into_iter().map(|h| (h, metadata.next())).collect();
        dropped.append(&mut left_out);
        left_out = dropped;
        (items, used) = renderer.answer(&response);
        renders += 1;
    }
    // A long result left out can leave room for shorter ones after it: each of the
    // next few that still fits goes back, in rank order. One whose source alone is over
    // the room left (by estimate, which counts less than its snapshot) is not tried.
    let mut tries = REFILL_TRIES;
    for (hit, metadata) in left_out {
        if tries == 0 {
            break;
        }
        if hit.tokens > budget.saturating_sub(used) {
            continue;
        }
        tries -= 1;
        response.results.push(hit);
        let with_metadata = metadata.is_some();
        response.metadata.extend(metadata);
        let (tried, total) = renderer.answer(&response);
        renders += 1;
        if total <= budget {
            items = tried;
            used = total;
        } else {
            response.results.pop();
            if with_metadata {
                response.metadata.pop();
            }
        }
    }
    // One result still over: its snapshot cut shorter until the answer fits.
    let mut limit = response.truncated_to.unwrap_or(budget).min(budget);
    for _ in 0..8 {
        if used <= budget || response.results.is_empty() || limit == 0 {
            break;
        }
        limit = limit.saturating_sub(used - budget + 8);
        response.truncated_to = Some(limit);
        (items, used) = renderer.answer(&response);
        renders += 1;
    }
    // The whole answer counted once more: the renderer adds up its parts' counts (the
    // graph's own, each snapshot's), and the ceiling holds even if the whole ever
    // counted otherwise.
    let whole = content_tokens(&items, tokenizer);
    debug_assert_eq!(whole, used, "the renderer's count is the answer's");
    used = whole;
    if used > budget {
        items = clamp(items, budget, tokenizer);
        used = content_tokens(&items, tokenizer);
    }
    response.tokens_used = used;
    tracing::debug!(
        renders,
        results = response.results.len(),
        tokens = used,
        budget,
        "answer fitted to its budget"
    );
    (response, items)
}

/// Results left out that are tried again, at most, one by one, for the room left (each
/// try renders and counts the answer again).
const REFILL_TRIES: usize = 6;

/// Items in order, each kept whole while it fits and the first that does not cut to the
/// tokens left (on a line boundary); the rest left out.
fn clamp(items: Vec<ContentItem>, budget: usize, tokenizer: Tokenizer) -> Vec<ContentItem> {
    let mut left = budget;
    let mut out = Vec::with_capacity(items.len());
    for mut item in items {
        let tokens = tokenizer.count(&item.text) + 1;
        if tokens <= left {
            left -= tokens;
            out.push(item);
            continue;
        }
        let end = tokenizer.fitting_lines(&item.text, left.saturating_sub(1));
        if end > 0 {
            item.text.truncate(end);
            out.push(item);
        }
        break;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::{chunks, hit, response};
    use super::*;
    use crate::search::SearchHit;

    const SERVICE: &str = super::super::tests::SERVICE;

    /// The renderer's count of an answer is its items' count, however the answer changes
    /// between renders (results left out and back, a snapshot cut, a progress note), and
    /// a snapshot made once is made again only for other targets.
    #[test]
    fn the_renderers_counts_are_its_answers() {
        let mut all = FileChunks::new();
        let mut results = Vec::new();
        for (i, path) in ["a.ts", "b.ts"].iter().enumerate() {
            let file = chunks(path, SERVICE);
            for name in ["validateToken", "TokenService"] {
                let chunk = file.iter().find(|c| c.name == name).unwrap();
                results.push(hit(chunk, 0.9 - i as f32 * 0.2));
            }
            all.insert(("r".into(), path.to_string()), file);
        }
        for tokenizer in Tokenizer::ALL {
            let mut renderer = Renderer::new(&all);
            for keep in [4, 1, 3, 4] {
                for (truncated_to, embedding) in [
                    (None, None),
                    (Some(40), None),
                    (
                        None,
                        Some(crate::store::EmbeddingState {
                            total: 10,
                            pending: 3,
                        }),
                    ),
                ] {
                    let mut r = response(results[..keep].to_vec());
                    r.tokenizer = tokenizer;
                    r.truncated_to = truncated_to;
                    r.embedding = embedding;
                    let (items, tokens) = renderer.answer(&r);
                    assert_eq!(items, content_items(&r, &all), "{tokenizer} {keep}");
                    assert_eq!(
                        tokens,
                        content_tokens(&items, tokenizer),
                        "{tokenizer} {keep}"
                    );
                }
            }
            // Target sets seen: {validateToken} and {both} in each file.
            assert_eq!(renderer.made.len(), 4, "{tokenizer}");
        }
    }

    fn files(path: &str) -> FileChunks {
        let mut files = FileChunks::new();
        files.insert(("r".into(), path.into()), chunks(path, SERVICE));
        files
    }

    /// A long result that does not fit leaves its room to a shorter one ranked below it.
    #[test]
    fn a_long_result_left_out_makes_room_for_a_shorter_one() {
        let mut all = FileChunks::new();
        let mut pick = |path: &str, name: &str, score: f32| {
            let file = chunks(path, SERVICE);
            let chunk = file.iter().find(|c| c.name == name).unwrap().clone();
            all.insert(("r".into(), path.to_string()), file);
            hit(&chunk, score)
        };
        let best = pick("a.ts", "validateToken", 0.9);
        let long = pick("b.ts", "TokenService", 0.8);
        let short = pick("c.ts", "validateToken", 0.7);
        let tokenizer = Tokenizer::default();
        let count = |results: Vec<SearchHit>| {
            content_tokens(&content_items(&response(results), &all), tokenizer)
        };
        let budget = count(vec![best.clone(), short.clone()]);
        assert!(count(vec![best.clone(), long.clone()]) > budget);
        let mut r = response(vec![best, long, short]);
        r.token_budget = budget;
        let (fitted, items) = fit_content(r, &all);
        let paths: Vec<&str> = fitted.results.iter().map(|h| h.path.as_str()).collect();
        assert_eq!(paths, ["a.ts", "c.ts"]);
        assert!(content_tokens(&items, tokenizer) <= budget);
    }

    /// Results in four files; the answer at several budgets never exceeds them, keeps the
    /// best results, and says in its header what it holds.
    #[test]
    fn the_whole_answer_stays_within_the_budget() {
        let mut results = Vec::new();
        let mut all = FileChunks::new();
        for (i, path) in ["a.ts", "b.ts", "c.ts", "d.ts"].iter().enumerate() {
            let file = chunks(path, SERVICE);
            let method = file
                .iter()
                .find(|c| c.name == "validateToken")
                .unwrap()
                .clone();
            results.push(hit(&method, 0.9 - i as f32 * 0.1));
            let class = file.iter().find(|c| c.name == "TokenService").unwrap();
            results.push(hit(class, 0.5 - i as f32 * 0.1));
            all.insert(("r".into(), path.to_string()), file);
        }
        // In each encoding, the budget holds in that encoding's tokens.
        for tokenizer in Tokenizer::ALL {
            let whole = |results: Vec<SearchHit>| {
                let mut r = response(results);
                r.tokenizer = tokenizer;
                r
            };
            let unbounded =
                content_tokens(&content_items(&whole(results.clone()), &all), tokenizer);
            for budget in [60, 150, 300, 600, unbounded] {
                let mut r = whole(results.clone());
                r.token_budget = budget;
                let (fitted, items) = fit_content(r, &all);
                let total = content_tokens(&items, tokenizer);
                assert!(total <= budget, "{tokenizer}: {total} > {budget}");
                assert_eq!(fitted.tokens_used, total);
                assert!(!fitted.results.is_empty());
                assert_eq!(fitted.results[0].path, "a.ts", "the best result stays");
                if budget == unbounded {
                    assert_eq!(
                        fitted.results.len(),
                        results.len(),
                        "nothing dropped when it fits"
                    );
                }
            }
        }
    }

    /// A single result over the budget is cut with its note, within the budget.
    #[test]
    fn a_lone_result_is_cut_to_fit() {
        let all = files("a.ts");
        let class = all[&("r".to_string(), "a.ts".to_string())]
            .iter()
            .find(|c| c.name == "TokenService")
            .unwrap()
            .clone();
        let mut r = response(vec![hit(&class, 0.9)]);
        r.token_budget = 120;
        let (fitted, items) = fit_content(r, &all);
        assert!(
            content_tokens(&items, Tokenizer::default()) <= 120,
            "{items:?}"
        );
        assert_eq!(fitted.results.len(), 1);
        assert!(
            items[1].text.contains("// … truncated"),
            "{:?}",
            items[1].text
        );
        // A budget too small even for the graph: the items are cut, never over.
        let mut r = response(vec![hit(&class, 0.9)]);
        r.token_budget = 5;
        let (_, items) = fit_content(r, &all);
        assert!(
            content_tokens(&items, Tokenizer::default()) <= 5,
            "{items:?}"
        );
    }
}
