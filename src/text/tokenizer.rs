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
    pattern: fancy_regex::Regex,
    ranks: HashMap<Vec<u8>, u32>,
    nfkc: bool,
}

impl Encoding {
    /// Parses a file shipped in the binary; a broken one is a build defect, which the
    /// unit tests catch, so it panics with the reason.
    fn parse(file: &str, nfkc: bool) -> Self {
        let file: EncodingFile =
            serde_json::from_str(file).expect("a shipped tokenizer file is valid JSON");
        let pattern =
            fancy_regex::Regex::new(&file.pat_str).expect("a shipped tokenizer's pattern compiles");
        let mut ranks = HashMap::new();
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
        if self.nfkc && !text.is_ascii() {
            let normalized: String = text.nfkc().collect();
            return self.count_pieces(&normalized);
        }
        self.count_pieces(text)
    }

    fn count_pieces(&self, text: &str) -> usize {
        let mut tokens = 0;
        let mut at = 0;
        for piece in self.pattern.find_iter(text) {
            let Ok(piece) = piece else {
                // The pattern gave up (its backtracking limit): every byte left counts
                // as a token, more than any encoding would make of them.
                return tokens + text.len() - at;
            };
            at = piece.end();
            let bytes = piece.as_str().as_bytes();
            tokens += if self.ranks.contains_key(bytes) {
                1
            } else {
                self.merged_parts(bytes)
            };
        }
        tokens
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
