//! Trigrams: what a file's content is indexed by, and what a pattern needs of a file
//! before it can match there (pure; no I/O).
//!
//! Content is indexed by its byte trigrams with ASCII letters folded to lower case, so one
//! index serves case-sensitive and case-insensitive patterns alike: the plan looks up
//! folded trigrams and the compiled pattern, run over each candidate, decides.
//!
//! A pattern is planned from its parsed form ([`regex_syntax::hir::Hir`]) as in Russ Cox's
//! "Regular Expression Matching with a Trigram Index": runs of literal bytes in a
//! concatenation need all of their trigrams, alternatives need any one branch's, and
//! anything that may match without a literal (`\w+`, `.*`, `x?`) needs nothing. The plan
//! is sound: a file it rules out cannot hold a match (the two non-ASCII characters that
//! case-insensitive matching equates with ASCII letters, the Kelvin sign and the long s,
//! are indexed as `k` and `s`).

use regex_syntax::hir::{Class, Hir, HirKind};

/// A trigram: three bytes, ASCII letters folded to lower case, as `b0 << 16 | b1 << 8 | b2`.
pub type Trigram = u32;

/// What a file must contain for a pattern to match in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Nothing can be required: every file is a candidate.
    All,
    /// Every one of these trigrams (sorted, distinct).
    Trigrams(Vec<Trigram>),
    /// Every one of these plans.
    And(Vec<Plan>),
    /// At least one of these plans.
    Or(Vec<Plan>),
}

impl Plan {
    /// Whether the plan rules nothing out.
    pub fn is_all(&self) -> bool {
        matches!(self, Plan::All)
    }

    /// Whether a file whose trigram set answers `has` may hold a match.
    pub fn admits(&self, has: &impl Fn(Trigram) -> bool) -> bool {
        match self {
            Plan::All => true,
            Plan::Trigrams(t) => t.iter().all(|&t| has(t)),
            Plan::And(parts) => parts.iter().all(|p| p.admits(has)),
            Plan::Or(parts) => parts.iter().any(|p| p.admits(has)),
        }
    }

    fn and(parts: Vec<Plan>) -> Plan {
        let mut kept: Vec<Plan> = Vec::new();
        let mut trigrams: Vec<Trigram> = Vec::new();
        for part in parts {
            match part {
                Plan::All => {}
                Plan::Trigrams(t) => trigrams.extend(t),
                Plan::And(inner) => kept.extend(inner),
                other => kept.push(other),
            }
        }
        if !trigrams.is_empty() {
            trigrams.sort_unstable();
            trigrams.dedup();
            kept.insert(0, Plan::Trigrams(trigrams));
        }
        match kept.len() {
            0 => Plan::All,
            1 => kept.pop().unwrap_or(Plan::All),
            _ => Plan::And(kept),
        }
    }

    fn or(parts: Vec<Plan>) -> Plan {
        if parts.is_empty() || parts.iter().any(Plan::is_all) {
            return Plan::All;
        }
        let mut flat = Vec::with_capacity(parts.len());
        for part in parts {
            match part {
                Plan::Or(inner) => flat.extend(inner),
                other => flat.push(other),
            }
        }
        if flat.len() == 1 {
            return flat.pop().unwrap_or(Plan::All);
        }
        Plan::Or(flat)
    }
}

/// The byte `b` as the index stores it.
fn fold(b: u8) -> u8 {
    b.to_ascii_lowercase()
}

fn key(a: u8, b: u8, c: u8) -> Trigram {
    (u32::from(fold(a)) << 16) | (u32::from(fold(b)) << 8) | u32::from(fold(c))
}

/// UTF-8 of the Kelvin sign and of the long s, which Unicode case folding matches with
/// `k` and `s`.
const KELVIN_UTF8: &[u8] = "\u{212A}".as_bytes();
const LONG_S_UTF8: &[u8] = "\u{17F}".as_bytes();

/// `bytes` with the Kelvin sign written `k` and the long s written `s` (the two
/// characters outside ASCII that case-insensitive matching equates with ASCII letters),
/// for trigrams only: content and pattern literals alike go through it.
fn normalized(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if !bytes.iter().any(|&b| b == 0xE2 || b == 0xC5) {
        return std::borrow::Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut rest = bytes;
    while let Some(&first) = rest.first() {
        if rest.starts_with(KELVIN_UTF8) {
            out.push(b'k');
            rest = &rest[KELVIN_UTF8.len()..];
        } else if rest.starts_with(LONG_S_UTF8) {
            out.push(b's');
            rest = &rest[LONG_S_UTF8.len()..];
        } else {
            out.push(first);
            rest = &rest[1..];
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The distinct trigrams of `content`, sorted.
pub fn of_content(content: &[u8]) -> Vec<Trigram> {
    let content = normalized(content);
    let mut out: Vec<Trigram> = content.windows(3).map(|w| key(w[0], w[1], w[2])).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The trigrams of a literal run (sorted, distinct); none when it is shorter than three.
fn of_literal(bytes: &[u8]) -> Plan {
    if bytes.len() < 3 {
        return Plan::All;
    }
    Plan::Trigrams(of_content(bytes))
}

/// The plan of a parsed pattern.
pub fn plan(hir: &Hir) -> Plan {
    walk(hir).plan()
}

/// What a piece of a pattern contributes: the literal it always matches exactly (folded),
/// when it is one, and what it requires otherwise.
enum Piece {
    Exact(Vec<u8>),
    Needs(Plan),
}

impl Piece {
    fn plan(self) -> Plan {
        match self {
            Piece::Exact(bytes) => of_literal(&bytes),
            Piece::Needs(plan) => plan,
        }
    }
}

/// Alternatives of literals kept as such up to this many (so `(get|set)Name` can need
/// `getName` or `setName` rather than only `Name`).
const MAX_EXACT_ALTERNATIVES: usize = 16;

fn walk(hir: &Hir) -> Piece {
    match hir.kind() {
        HirKind::Empty => Piece::Exact(Vec::new()),
        HirKind::Literal(lit) => {
            Piece::Exact(normalized(&lit.0).iter().map(|&b| fold(b)).collect())
        }
        HirKind::Class(class) => match single_folded_byte(class) {
            Some(b) => Piece::Exact(vec![b]),
            None => Piece::Needs(Plan::All),
        },
        // Assertions match no bytes, but the bytes either side are not one literal.
        HirKind::Look(_) => Piece::Needs(Plan::All),
        HirKind::Capture(cap) => walk(&cap.sub),
        HirKind::Repetition(rep) => {
            if rep.min == 0 {
                Piece::Needs(Plan::All)
            } else if rep.min == 1 && rep.max == Some(1) {
                walk(&rep.sub)
            } else {
                Piece::Needs(walk(&rep.sub).plan())
            }
        }
        HirKind::Concat(parts) => concat(parts),
        HirKind::Alternation(branches) => {
            let mut pieces: Vec<Piece> = branches.iter().map(walk).collect();
            if pieces.len() == 1 {
                return pieces.pop().unwrap_or(Piece::Needs(Plan::All));
            }
            Piece::Needs(Plan::or(pieces.into_iter().map(Piece::plan).collect()))
        }
    }
}

/// A concatenation: runs of exact pieces become literals; an alternation of literals
/// between two literals is expanded (`foo(bar|baz)qux` needs `foobarqux` or
/// `foobazqux`, bounded by [`MAX_EXACT_ALTERNATIVES`]); everything else is required on
/// its own.
fn concat(parts: &[Hir]) -> Piece {
    // Each run is the set of literal strings the run so far may be (one, or a few after an
    // alternation of literals).
    let mut needs: Vec<Plan> = Vec::new();
    let mut run: Vec<Vec<u8>> = vec![Vec::new()];
    let mut all_exact = true;
    for part in parts {
        if let Some(branches) = literal_alternatives(part)
            && run.len() * branches.len() <= MAX_EXACT_ALTERNATIVES
        {
            run = run
                .iter()
                .flat_map(|prefix| {
                    branches.iter().map(move |b| {
                        let mut s = prefix.clone();
                        s.extend_from_slice(b);
                        s
                    })
                })
                .collect();
            if branches.len() > 1 {
                all_exact = false;
            }
            continue;
        }
        all_exact = false;
        needs.push(run_plan(&run));
        run = vec![Vec::new()];
        needs.push(walk(part).plan());
    }
    if all_exact && run.len() == 1 {
        return Piece::Exact(run.pop().unwrap_or_default());
    }
    needs.push(run_plan(&run));
    Piece::Needs(Plan::and(needs))
}

/// The literal strings `hir` may match exactly (one for a literal, a few for an
/// alternation of literals), folded; `None` when it is not that.
fn literal_alternatives(hir: &Hir) -> Option<Vec<Vec<u8>>> {
    match hir.kind() {
        HirKind::Alternation(branches) if branches.len() <= MAX_EXACT_ALTERNATIVES => branches
            .iter()
            .map(|b| match walk(b) {
                Piece::Exact(bytes) => Some(bytes),
                Piece::Needs(_) => None,
            })
            .collect(),
        HirKind::Capture(cap) => literal_alternatives(&cap.sub),
        _ => match walk(hir) {
            Piece::Exact(bytes) => Some(vec![bytes]),
            Piece::Needs(_) => None,
        },
    }
}

/// What a run of literal alternatives requires: any one of them.
fn run_plan(run: &[Vec<u8>]) -> Plan {
    Plan::or(run.iter().map(|s| of_literal(s)).collect())
}

/// The one byte a class matches once ASCII letters are folded, when it matches only
/// that (`[Aa]`, which is what `(?i)a` parses to; `[Kk\u{212A}]` counts as `k`).
fn single_folded_byte(class: &Class) -> Option<u8> {
    const KELVIN: char = '\u{212A}';
    const LONG_S: char = '\u{17F}';
    match class {
        Class::Unicode(set) => {
            let mut byte: Option<u8> = None;
            for range in set.ranges() {
                for c in range.start()..=range.end() {
                    let b = match c {
                        KELVIN => b'k',
                        LONG_S => b's',
                        c if c.is_ascii() => fold(c as u8),
                        _ => return None,
                    };
                    match byte {
                        None => byte = Some(b),
                        Some(seen) if seen == b => {}
                        Some(_) => return None,
                    }
                    // A wide range cannot fold to one byte; stop before iterating it.
                    if u32::from(range.end()) - u32::from(range.start()) > 4 {
                        return None;
                    }
                }
            }
            byte
        }
        Class::Bytes(set) => {
            let mut byte: Option<u8> = None;
            for range in set.ranges() {
                if range.end() - range.start() > 4 {
                    return None;
                }
                for b in range.start()..=range.end() {
                    let b = fold(b);
                    match byte {
                        None => byte = Some(b),
                        Some(seen) if seen == b => {}
                        Some(_) => return None,
                    }
                }
            }
            byte
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_of(pattern: &str) -> Plan {
        let hir = regex_syntax::ParserBuilder::new()
            .build()
            .parse(pattern)
            .expect("valid pattern");
        plan(&hir)
    }

    fn tri(s: &str) -> Vec<Trigram> {
        of_content(s.as_bytes())
    }

    #[test]
    fn a_literal_needs_all_its_folded_trigrams() {
        assert_eq!(plan_of("Token"), Plan::Trigrams(tri("token")));
        assert_eq!(plan_of("(?i)tOKEN"), Plan::Trigrams(tri("token")));
    }

    #[test]
    fn short_and_open_patterns_need_nothing() {
        assert!(plan_of("ab").is_all());
        assert!(plan_of(r"\w+").is_all());
        assert!(plan_of("(foo)?").is_all());
        assert!(plan_of("foo|x").is_all());
    }

    #[test]
    fn concatenations_split_at_what_is_not_literal() {
        let p = plan_of(r"validate\w+Token");
        assert_eq!(
            p,
            Plan::Trigrams(
                of_content(b"validatetoken")
                    .into_iter()
                    .filter(|t| { tri("validate").contains(t) || tri("token").contains(t) })
                    .collect()
            )
        );
    }

    #[test]
    fn alternations_of_literals_between_literals_are_expanded() {
        let p = plan_of("(get|set)Name");
        assert_eq!(
            p,
            Plan::Or(vec![
                Plan::Trigrams(tri("getname")),
                Plan::Trigrams(tri("setname"))
            ])
        );
        let admitted = |text: &str| {
            let set = tri(text);
            p.admits(&|t| set.binary_search(&t).is_ok())
        };
        assert!(admitted("x.setName(1)"));
        assert!(!admitted("x.putName(1)"));
    }

    #[test]
    fn repetitions_keep_what_they_repeat() {
        assert_eq!(plan_of("(abc)+"), Plan::Trigrams(tri("abc")));
        assert!(plan_of("(abc)*").is_all());
    }

    /// Soundness over many small patterns and texts: whenever the pattern matches a text,
    /// the plan admits it.
    #[test]
    fn the_plan_never_rules_out_a_match() {
        let patterns = [
            "abc",
            "(?i)ABC",
            "a.c",
            "ab|cd",
            "(ab|cd)ef",
            "x(abc)+y",
            "(?i)(get|SET)name",
            r"\babc\b",
            "a[bB]c",
            "[a-c]bc",
            "abc?d",
            "a(b|c)de",
            "(?i)straße",
            "kelvin",
            "(?i)kelvin",
            "^abc$",
            "(?m)^ab",
            "ab{2,3}c",
            "(a|b)(c|d)(e|f)",
        ];
        let texts = [
            "abc",
            "ABC",
            "xabcy",
            "abdef",
            "cdef",
            "abcd",
            "getName",
            "SETNAME",
            "a-c",
            "abbc",
            "abbbc",
            "ace",
            "STRASSE",
            "straße",
            "KELVIN",
            "\u{212A}elvin",
            "ab\ncd",
            "bdf",
            "x abc y",
            "abcabcy",
        ];
        for pattern in patterns {
            let plan = plan_of(pattern);
            let re = regex::Regex::new(pattern).expect("valid");
            for text in texts {
                let set = of_content(text.as_bytes());
                if re.is_match(text) {
                    assert!(
                        plan.admits(&|t| set.binary_search(&t).is_ok()),
                        "{pattern:?} matches {text:?} but its plan {plan:?} rules it out"
                    );
                }
            }
        }
    }
}
