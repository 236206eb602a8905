//! Real token counts: the byte-pair encodings agents' models read, so that an answer's
//! token budget is a ceiling in the agent's own tokens rather than an estimate.
//!
//! Three encodings ship inside the binary (`tokenizers/`, the files of the npm packages
//! `@anthropic-ai/tokenizer` 0.0.4 and `tiktoken` 1.0.22, unchanged; their README says
//! where each comes from): Claude's public tokenizer (the default: on code it counts more
//! tokens than the other two, docs/BENCHMARKS.md), OpenAI's `o200k_base` and
//! `cl100k_base`. An encoding is parsed the first time it counts.
//!
//! Counting is tiktoken's: the text is split by the encoding's pattern; a piece that is a
//! token counts one, any other is merged pair by pair, lowest rank first, and counts its
//! parts. Claude's text is NFKC-normalised first, as its package does. Special tokens are
//! not recognised: `<|endoftext|>` in a file is ordinary text.
//!
//! Written here rather than taken from a crate: `tiktoken-rs` carries only OpenAI's
//! encodings and pulls an OpenAI client; the `tokenizers` crate (already a dependency)
//! counts the same tokens 3.5x slower (25 against 7 ms for 30k characters of Rust). The
//! merge loop is tiktoken's (MIT).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use base64::Engine as _;
use rmcp::schemars;
use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization as _;

/// The encoding an answer's tokens are counted in.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, strum::Display,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
#[derive(clap::ValueEnum, utoipa::ToSchema, schemars::JsonSchema)]
pub enum Tokenizer {
    /// Claude's public tokenizer (`@anthropic-ai/tokenizer`); the default.
    #[default]
    Claude,
    /// OpenAI's `o200k_base` (GPT-4o and later).
    O200k,
    /// OpenAI's `cl100k_base` (GPT-4, GPT-3.5).
    Cl100k,
}

impl Tokenizer {
    /// Every encoding, in the order above.
    pub const ALL: [Tokenizer; 3] = [Tokenizer::Claude, Tokenizer::O200k, Tokenizer::Cl100k];

    /// Tokens of `text` in this encoding. Counts of long texts are remembered (an answer
    /// is counted again as it is fitted to its budget, and the same files come back).
    pub fn count(self, text: &str) -> usize {
        if text.len() < CACHED_FROM {
            return self.encoding().count(text);
        }
        let key = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            (self, text).hash(&mut h);
            (h.finish(), text.len())
        };
        let cache = COUNTS.get_or_init(Default::default);
        if let Some(&n) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return n;
        }
        let n = self.encoding().count(text);
        let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(key, n);
        n
    }

    /// Parses this encoding now rather than at its first count (a few tens of
    /// milliseconds): a server warms its default at start, so that its first answer does
    /// not pay for it.
    pub fn load(self) {
        self.encoding();
    }

    /// The byte length of the longest run of `text`'s first lines (each with its line
    /// break) that counts at most `max_tokens`: where to cut a text to fit a budget.
    pub fn fitting_lines(self, text: &str, max_tokens: usize) -> usize {
        let ends: Vec<usize> = text
            .split_inclusive('\n')
            .scan(0, |at, line| {
                *at += line.len();
                Some(*at)
            })
            .collect();
        // Counts grow with the lines kept: the longest prefix that fits, by bisection.
        let fits = ends.partition_point(|&end| self.count(&text[..end]) <= max_tokens);
        fits.checked_sub(1).map_or(0, |i| ends[i])
    }

    fn encoding(self) -> &'static Encoding {
        static ENCODINGS: [OnceLock<Encoding>; 3] =
            [OnceLock::new(), OnceLock::new(), OnceLock::new()];
        let (slot, file, nfkc) = match self {
            Tokenizer::Claude => (&ENCODINGS[0], CLAUDE, true),
            Tokenizer::O200k => (&ENCODINGS[1], O200K, false),
            Tokenizer::Cl100k => (&ENCODINGS[2], CL100K, false),
        };
        slot.get_or_init(|| Encoding::parse(file, nfkc))
    }
}

/// Texts this long or longer have their counts remembered.
const CACHED_FROM: usize = 512;
/// Counts remembered before the memory starts again.
const CACHE_ENTRIES: usize = 4096;
/// Counts of long texts by (hash of encoding and text, length).
static COUNTS: OnceLock<Mutex<HashMap<(u64, usize), usize>>> = OnceLock::new();

const CLAUDE: &str = include_str!("tokenizers/claude.json");
const O200K: &str = include_str!("tokenizers/o200k_base.json");
const CL100K: &str = include_str!("tokenizers/cl100k_base.json");

/// An encoding file as the npm packages ship it.
#[derive(Deserialize)]
struct EncodingFile {
    pat_str: String,
    /// Base64 tokens in rank order, in segments that start `! RANK`.
    bpe_ranks: String,
}

/// A parsed encoding: the split pattern and every token's rank.
struct Encoding {
    pattern: Split,
    ranks: rustc_hash::FxHashMap<Vec<u8>, u32>,
    nfkc: bool,
}

/// Every shipped pattern ends in these alternatives; `\s+(?!\S)` needs look-ahead, which
/// the `regex` crate lacks, so [`Split`] matches `\s+` and gives the look-ahead's answer.
const WHITESPACE_TAIL: &str = r"|\s+(?!\S)|\s+";

/// An encoding's split pattern, run by the `regex` crate's automata (a backtracking
/// engine that can look ahead, as tiktoken's pattern asks, took three quarters of the
/// count's time: docs/BENCHMARKS.md).
///
/// The pattern is compiled with its `\s+(?!\S)|\s+` tail as `\s+`. Where that tail
/// matches (a blank piece, unless it ends a line and the pattern has `\s*[\r\n]+`, the
/// only earlier alternative that takes blank text), the look-ahead would have left the
/// run's last character to the next piece when a non-blank character follows and the
/// run is longer than one character: [`Split::pieces`] does that. Checked piece by piece
/// against the pattern run with look-ahead (`fancy-regex`) in the tests.
struct Split {
    regex: regex_automata::meta::Regex,
    /// The pattern has `\s*[\r\n]+` before its tail: a blank piece ending a line is its.
    line_ends: bool,
    /// Search caches not in use: a count takes one for all its pieces (the regex's own
    /// pool, taken at each piece, locks a mutex each time on any thread but the one that
    /// made the regex, which was a tenth of an answer's counting time).
    caches: Mutex<Vec<regex_automata::meta::Cache>>,
}

impl Split {
    fn new(pattern: &str) -> Self {
        let head = pattern
            .strip_suffix(WHITESPACE_TAIL)
            .expect("a shipped tokenizer's pattern ends in its whitespace alternatives");
        let regex = regex_automata::meta::Regex::new(&format!(r"{head}|\s+"))
            .expect("a shipped tokenizer's pattern compiles");
        let line_ends = head.contains(r"|\s*[\r\n]+");
        Self {
            regex,
            line_ends,
            caches: Mutex::new(Vec::new()),
        }
    }

    /// A search cache for one count's pieces; [`Split::give_back`] when done.
    fn cache(&self) -> regex_automata::meta::Cache {
        let spare = self.caches.lock().unwrap_or_else(|e| e.into_inner()).pop();
        spare.unwrap_or_else(|| self.regex.create_cache())
    }

    /// Keeps `cache` for the next count.
    fn give_back(&self, cache: regex_automata::meta::Cache) {
        self.caches
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(cache);
    }

    /// The pieces of `text`, in order, as the encoding's pattern splits it.
    fn pieces<'s, 't, 'c>(
        &'s self,
        text: &'t str,
        cache: &'c mut regex_automata::meta::Cache,
    ) -> impl Iterator<Item = &'t str> + use<'s, 't, 'c> {
        let mut at = 0;
        std::iter::from_fn(move || {
            if at == text.len() {
                return None;
            }
            // Every character starts some alternative, so each piece starts where the last
            // ended: an anchored search, no scan for where the next match begins.
            let input = regex_automata::Input::new(text)
                .range(at..)
                .anchored(regex_automata::Anchored::Yes);
            let Some(m) = self.regex.search_with(cache, &input) else {
                // Not reached with the shipped patterns; a character alone is a piece.
                let len = text[at..].chars().next().map_or(1, char::len_utf8);
                at += len;
                return Some(&text[at - len..at]);
            };
            let mut end = m.end();
            let piece = &text[m.range()];
            let blank = piece.chars().all(char::is_whitespace);
            let line_end = self.line_ends && piece.ends_with(['\r', '\n']);
            if blank && !line_end && end < text.len() {
                // `\s+(?!\S)` backs off one character before the non-blank one that
                // follows; a single character falls through to `\s+` whole.
                if let Some((last, _)) = piece.char_indices().last().filter(|&(i, _)| i > 0) {
                    end = m.start() + last;
                }
            }
            at = end;
            Some(&text[m.start()..end])
        })
    }
}

impl Encoding {
    /// Parses a file shipped in the binary; a broken one is a build defect, which the
    /// unit tests catch, so it panics with the reason.
    fn parse(file: &str, nfkc: bool) -> Self {
        let file: EncodingFile =
            serde_json::from_str(file).expect("a shipped tokenizer file is valid JSON");
        let pattern = Split::new(&file.pat_str);
        let mut ranks = rustc_hash::FxHashMap::default();
        let mut words = file.bpe_ranks.split_ascii_whitespace();
        let mut rank = 0u32;
        while let Some(word) = words.next() {
            if word == "!" {
                rank = words
                    .next()
                    .and_then(|r| r.parse().ok())
                    .expect("a shipped tokenizer's segment starts with a rank");
                continue;
            }
            let token = base64::engine::general_purpose::STANDARD
                .decode(word)
                .expect("a shipped tokenizer's tokens are base64");
            ranks.insert(token, rank);
            rank += 1;
        }
        Self {
            pattern,
            ranks,
            nfkc,
        }
    }

    fn count(&self, text: &str) -> usize {
        // Most non-ASCII text (an answer's ★, ◆ and dashes) is NFKC already: the quick
        // check says so without normalising it.
        if self.nfkc
            && !text.is_ascii()
            && unicode_normalization::is_nfkc_quick(text.chars())
                != unicode_normalization::IsNormalized::Yes
        {
            let normalized: String = text.nfkc().collect();
            return self.count_pieces(&normalized);
        }
        self.count_pieces(text)
    }

    fn count_pieces(&self, text: &str) -> usize {
        let mut cache = self.pattern.cache();
        let n = self
            .pattern
            .pieces(text, &mut cache)
            .map(|piece| {
                let bytes = piece.as_bytes();
                if self.ranks.contains_key(bytes) {
                    1
                } else {
                    self.merged_parts(bytes)
                }
            })
            .sum();
        self.pattern.give_back(cache);
        n
    }

    /// How many tokens byte-pair merging makes of `piece` (tiktoken's merge: the pair
    /// whose join has the lowest rank first, until no join is a token).
    fn merged_parts(&self, piece: &[u8]) -> usize {
        if piece.len() < 2 {
            return piece.len();
        }
        let rank = |parts: &[(usize, u32)], i: usize| -> u32 {
            if i + 3 < parts.len() {
                self.ranks
                    .get(&piece[parts[i].0..parts[i + 3].0])
                    .copied()
                    .unwrap_or(u32::MAX)
            } else {
                u32::MAX
            }
        };
        // parts[i] = (start of part i, rank of joining part i with part i + 1).
        let mut parts: Vec<(usize, u32)> = (0..piece.len() - 1)
            .map(|i| {
                let r = self.ranks.get(&piece[i..i + 2]).copied();
                (i, r.unwrap_or(u32::MAX))
            })
            .collect();
        parts.push((piece.len() - 1, u32::MAX));
        parts.push((piece.len(), u32::MAX));
        loop {
            let (min_rank, i) = parts[..parts.len() - 1]
                .iter()
                .enumerate()
                .map(|(i, &(_, r))| (r, i))
                .min()
                .unwrap_or((u32::MAX, 0));
            if min_rank == u32::MAX {
                break;
            }
            if i > 0 {
                parts[i - 1].1 = rank(&parts, i - 1);
            }
            parts[i].1 = rank(&parts, i);
            parts.remove(i + 1);
        }
        parts.len() - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts from the reference implementation, `tiktoken` 1.0.22's `encode_ordinary`
    /// (Claude's text NFKC-normalised first, as `@anthropic-ai/tokenizer` does), taken once
    /// with node; the integration tests compare whole answers with it.
    #[test]
    fn counts_equal_the_reference_implementations() {
        let cases: &[(&str, [usize; 3])] = &[
            ("", [0, 0, 0]),
            ("hello world!", [3, 3, 3]),
            (
                "export function validateToken(token: string): boolean {\n  return token.length > 0;\n}\n",
                [22, 19, 19],
            ),
            ("    let x = 1;\n\n\n    // été ﬁn ①\n", [12, 15, 17]),
            ("<|endoftext|> 12345678 αβγ 🙂\t\tend", [19, 17, 17]),
        ];
        for (text, want) in cases {
            let got = Tokenizer::ALL.map(|t| t.count(text));
            assert_eq!(&got, want, "{text:?}");
        }
    }

    #[test]
    fn a_text_is_cut_after_the_last_line_that_fits() {
        let text = "fn a() {}\nfn bb() {}\nfn ccc() {}\n";
        let t = Tokenizer::Cl100k;
        let first = t.count("fn a() {}\n");
        let two = t.count("fn a() {}\nfn bb() {}\n");
        assert!(first < two && two < t.count(text));
        assert_eq!(t.fitting_lines(text, 0), 0);
        assert_eq!(t.fitting_lines(text, first), "fn a() {}\n".len());
        assert_eq!(t.fitting_lines(text, two), "fn a() {}\nfn bb() {}\n".len());
        assert_eq!(t.fitting_lines(text, 10_000), text.len());
        // Long texts are remembered, and the remembered count is the count.
        let long = text.repeat(100);
        assert_eq!(t.count(&long), t.count(&long));
        assert_eq!(t.count(&long), t.encoding().count(&long));
    }

    /// The split, run without look-ahead, makes the pieces the encoding's own pattern
    /// makes with it: on random texts of the characters the whitespace rule turns on, and
    /// on this crate's sources.
    #[test]
    fn the_split_is_the_patterns_split() {
        let alphabet: Vec<char> = " \t\n\r\u{a0}\u{3000}\u{2028}aZé1'sS.{/①🙂\u{301}"
            .chars()
            .collect();
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut texts: Vec<String> = (0..3000)
            .map(|_| {
                let len = (state >> 60) as usize + 1;
                (0..len)
                    .map(|_| {
                        state = state
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        alphabet[(state >> 33) as usize % alphabet.len()]
                    })
                    .collect()
            })
            .collect();
        texts.push(include_str!("tokenizer.rs").to_string());
        texts.push(include_str!("../render/budget.rs").to_string());
        for (t, file) in Tokenizer::ALL.into_iter().zip([CLAUDE, O200K, CL100K]) {
            let file: EncodingFile = serde_json::from_str(file).unwrap();
            let reference = fancy_regex::Regex::new(&file.pat_str).unwrap();
            let split = &t.encoding().pattern;
            for text in &texts {
                let want: Vec<&str> = reference
                    .find_iter(text)
                    .map(|m| m.unwrap().as_str())
                    .collect();
                let mut cache = split.cache();
                let got: Vec<&str> = split.pieces(text, &mut cache).collect();
                split.give_back(cache);
                assert_eq!(got, want, "{t} on {text:?}");
            }
        }
    }

    #[test]
    fn names_are_the_wire_names() {
        assert_eq!(Tokenizer::O200k.to_string(), "o200k");
        assert_eq!(
            serde_json::from_str::<Tokenizer>("\"cl100k\"").unwrap(),
            Tokenizer::Cl100k
        );
        assert_eq!(Tokenizer::default(), Tokenizer::Claude);
    }
}
