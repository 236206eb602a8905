//! Small pure text helpers shared by every layer: token estimates and real token counts
//! ([`tokenizer`]), whitespace collapsing, truncation on character boundaries and
//! identifier splitting for lexical search.
//!
//! Nothing here does I/O or knows about syntax trees.

pub mod tokenizer;

pub use tokenizer::Tokenizer;

/// Characters per token used by [`estimate_tokens`].
///
/// The blueprint's "4 chars/token" estimate, counted in Unicode scalar values, rounded
/// up: what sizes embedding batches and picks a search's candidates cheaply. Answers are
/// counted in real tokens ([`Tokenizer`]).
pub const CHARS_PER_TOKEN: usize = 4;

/// Estimated token count of `text` (`ceil(chars / 4)`).
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(CHARS_PER_TOKEN)
}

/// Collapses every run of whitespace (including newlines) into one space and trims the ends.
pub fn collapse_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// [`collapse_whitespace`] then [`truncate_chars`], reading only as much of `text` as
/// the result can show (cheap on multi-megabyte statements).
pub fn collapse_truncate(text: &str, max_chars: usize) -> String {
    // Collapsing never lengthens text, so a prefix of 4× the limit (plus slack for
    // whitespace runs) is enough unless the text is mostly whitespace; fall back to the
    // whole text then.
    let mut end = text.len();
    if let Some((i, _)) = text.char_indices().nth(max_chars.saturating_mul(8).max(64)) {
        end = i;
    }
    let collapsed = collapse_whitespace(&text[..end]);
    if collapsed.chars().count() > max_chars || end == text.len() {
        truncate_chars(&collapsed, max_chars)
    } else {
        truncate_chars(&collapse_whitespace(text), max_chars)
    }
}

/// Cuts `text` to at most `max_chars` characters, ending in `…` when something was cut.
pub fn truncate_chars(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_string(),
        Some(_) => {
            let keep = max_chars.saturating_sub(1);
            let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
            format!("{}…", text[..end].trim_end())
        }
    }
}

/// Splits an identifier into lower-case words at camelCase humps, digit boundaries,
/// underscores, dashes and dollar signs.
///
/// `validateToken` → `["validate", "token"]`, `MAX_RETRY_COUNT` → `["max", "retry", "count"]`,
/// `HTTPServer2` → `["http", "server", "2"]`.
///
/// ```
/// assert_eq!(sextant::text::split_identifier("validateToken"), ["validate", "token"]);
/// assert_eq!(sextant::text::split_identifier("MAX_RETRY_COUNT"), ["max", "retry", "count"]);
/// ```
pub fn split_identifier(ident: &str) -> Vec<String> {
    let mut words = Vec::new();
    identifier_parts(ident, |part| words.push(part.to_string()));
    words
}

/// [`split_identifier`] without its allocations: `f` hears each lower-case part in turn.
fn identifier_parts(ident: &str, mut f: impl FnMut(&str)) {
    let mut current = String::new();
    let mut chars = ident.chars().peekable();
    let mut prev: Option<char> = None;
    while let Some(c) = chars.next() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                f(&current);
                current.clear();
            }
            prev = Some(c);
            continue;
        }
        if let Some(prev) = prev.filter(|_| !current.is_empty()) {
            let next = chars.peek().copied();
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_alphabetic() && c.is_ascii_digit())
                || (prev.is_ascii_digit() && c.is_alphabetic())
                // "HTTPServer": the last capital of a run starts the next word.
                || (prev.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase));
            if boundary {
                f(&current);
                current.clear();
            }
        }
        current.extend(c.to_lowercase());
        prev = Some(c);
    }
    if !current.is_empty() {
        f(&current);
    }
}

/// Builds the lexical search text of a piece of code or prose: every identifier-like word
/// split into its parts (`validateToken` → `validate token`), the whole identifier kept as
/// well when it had several parts (`validatetoken`), all lower case, separated by spaces.
///
/// Punctuation and operators are dropped; numbers are kept.
pub fn search_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len() / 2);
    search_words(text, |word| {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    });
    out
}

/// The words of [`search_text`], in order, each given to `f` without building the text.
///
/// Runs of ASCII (most code) are split byte by byte; a word with other characters takes
/// the general path, which reads it as Unicode. Both give the same words.
pub fn search_words(text: &str, mut f: impl FnMut(&str)) {
    let mut whole = String::new();
    let mut current = String::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if !is_word_byte(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        let mut ascii = true;
        while i < bytes.len() && is_word_byte(bytes[i]) {
            ascii &= bytes[i].is_ascii();
            i += 1;
        }
        // A word ends at an ASCII byte or the end, so `start..i` is on char boundaries.
        let run = &text[start..i];
        if ascii {
            word_parts(run, true, &mut whole, &mut current, &mut f);
        } else {
            for raw in run.split(|c: char| !is_word_char(c)) {
                if !raw.is_empty() {
                    word_parts(raw, false, &mut whole, &mut current, &mut f);
                }
            }
        }
    }
}

/// Bytes a word may hold: ASCII letters, digits, `_` and `$`, and any byte of a
/// multi-byte character (which [`is_word_char`] then decides on).
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || !b.is_ascii()
}

/// Characters a word is made of.
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// Gives `f` each part of the word `raw` (split byte by byte when it is `ascii`) and then,
/// when it has several, the parts joined.
fn word_parts(
    raw: &str,
    ascii: bool,
    whole: &mut String,
    current: &mut String,
    f: &mut impl FnMut(&str),
) {
    whole.clear();
    let mut parts = 0;
    let mut part = |part: &str| {
        f(part);
        whole.push_str(part);
        parts += 1;
    };
    if ascii {
        ascii_identifier_parts(raw, current, &mut part);
    } else {
        identifier_parts(raw, &mut part);
    }
    if parts > 1 {
        f(whole);
    }
}

/// [`identifier_parts`] of an ASCII word, byte by byte, in the buffer `current`.
fn ascii_identifier_parts(ident: &str, current: &mut String, mut f: impl FnMut(&str)) {
    let bytes = ident.as_bytes();
    current.clear();
    for (i, &c) in bytes.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            if !current.is_empty() {
                f(current);
                current.clear();
            }
            continue;
        }
        if !current.is_empty() {
            let prev = bytes[i - 1];
            let next = bytes.get(i + 1).copied();
            let boundary = (prev.is_ascii_lowercase() && c.is_ascii_uppercase())
                || (prev.is_ascii_alphabetic() && c.is_ascii_digit())
                || (prev.is_ascii_digit() && c.is_ascii_alphabetic())
                || (prev.is_ascii_uppercase()
                    && c.is_ascii_uppercase()
                    && next.is_some_and(|n| n.is_ascii_lowercase()));
            if boundary {
                f(current);
                current.clear();
            }
        }
        current.push(c.to_ascii_lowercase() as char);
    }
    if !current.is_empty() {
        f(current);
    }
}

/// Removes the common leading indentation of all lines after the first, up to `column`
/// characters, so a member cut out of a deeply nested class reads flush left.
pub fn dedent_tail(text: &str, column: usize) -> String {
    if column == 0 {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if i == 0 {
            out.push_str(line);
            continue;
        }
        let strip = line
            .char_indices()
            .take(column)
            .take_while(|(_, c)| *c == ' ' || *c == '\t')
            .last()
            .map_or(0, |(i, c)| i + c.len_utf8());
        out.push_str(&line[strip..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_camel_snake_and_acronyms() {
        assert_eq!(split_identifier("validateToken"), ["validate", "token"]);
        assert_eq!(
            split_identifier("MAX_RETRY_COUNT"),
            ["max", "retry", "count"]
        );
        assert_eq!(split_identifier("HTTPServer2"), ["http", "server", "2"]);
        assert_eq!(split_identifier("$ref"), ["ref"]);
        assert_eq!(split_identifier("x"), ["x"]);
        assert!(split_identifier("__").is_empty());
    }

    #[test]
    fn search_text_keeps_whole_identifier_and_parts() {
        assert_eq!(
            search_text("validateToken(token)"),
            "validate token validatetoken token"
        );
        assert_eq!(
            search_text("MAX_RETRY_COUNT = 3;"),
            "max retry count maxretrycount 3"
        );
    }

    /// The words as the general (Unicode) path alone splits them.
    fn words_by_chars(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for raw in text.split(|c: char| !is_word_char(c)) {
            let mut parts = Vec::new();
            identifier_parts(raw, |p| parts.push(p.to_string()));
            let joined = parts.concat();
            let several = parts.len() > 1;
            out.extend(parts);
            if several {
                out.push(joined);
            }
        }
        out
    }

    /// The byte-wise path for ASCII gives the words the general path gives, on mixed
    /// scripts, identifier shapes at every boundary, and real code.
    #[test]
    fn ascii_words_are_the_general_paths_words() {
        let alphabet: Vec<char> = "aZq0_9$ .\n(ÉéßİΣ→中xYHTTPs-".chars().collect();
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..3000 {
            let len = (next() % 40) as usize;
            let text: String = (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            let mut got = Vec::new();
            search_words(&text, |w| got.push(w.to_string()));
            assert_eq!(got, words_by_chars(&text), "{text:?}");
        }
        let code = include_str!("../render/snapshot.rs");
        let mut got = Vec::new();
        search_words(code, |w| got.push(w.to_string()));
        assert_eq!(got, words_by_chars(code));
        assert!(got.len() > 1000);
    }

    #[test]
    fn estimates_tokens_by_chars() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("éééé"), 1);
    }

    #[test]
    fn truncates_on_char_boundaries() {
        assert_eq!(truncate_chars("héllo wörld", 5), "héll…");
        assert_eq!(truncate_chars("short", 10), "short");
        assert_eq!(collapse_whitespace("  a \n\t b  "), "a b");
    }

    #[test]
    fn dedents_following_lines_only() {
        let text = "foo() {\n    bar();\n  }";
        assert_eq!(dedent_tail(text, 2), "foo() {\n  bar();\n}");
        assert_eq!(dedent_tail("a\n\tb", 4), "a\nb");
    }
}
