//! Documentation, configuration and shell files as symbol trees, by line structure rather
//! than a grammar (pure; total on any UTF-8 text).
//!
//! - Markdown: a section per heading (ATX `#` and setext underlines, not inside fenced
//!   code), nested by level, so a breadcrumb reads `README.md > Install > From source`;
//!   text before the first heading is a `preamble` section.
//! - reStructuredText: a section per underlined (or over- and underlined) title, levels
//!   in the order their adornments first appear, as docutils assigns them.
//! - YAML: a setting per top-level key, with its second-level keys as children
//!   (`services > web`); JSON: a setting per top-level key of the root object; TOML: a
//!   setting per table (`[tool.ruff]`), keys before the first table as `root`.
//! - Dockerfile: a section per build stage (`FROM … AS name`).
//! - Shell: a function per `name() {` / `function name`, the lines between them as
//!   statements.
//!
//! Every non-blank line lands in a unit (the first unit reaches back to line 1, the last
//! to the end), units never overlap, and a file with no structure is one `document`.
//! Which reader a file gets is its language row's [`TextFormat`] (`Walker::Text`).

use super::Language;
use super::languages::Walker;
use super::symbol::{ByteRange, LineRange, ParsedFile, ParsedSymbol, SymbolKind};

/// How a language read by its lines is structured: the reader [`parse`] gives its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextFormat {
    /// Sections by heading.
    Markdown,
    /// Sections by underlined title.
    Rst,
    /// Settings by top-level key, with their second-level keys.
    Yaml,
    /// Settings by top-level key of the root object.
    Json,
    /// Settings by table.
    Toml,
    /// Sections by build stage.
    Dockerfile,
    /// Functions and the statements between them.
    Shell,
    /// No structure: the file is one document.
    Document,
}

/// Parses `source` as `language` by its row's [`TextFormat`] (a language with a tree walk
/// reads as one document).
pub fn parse(language: Language, source: &str) -> ParsedFile {
    let text = Text::new(source);
    let format = match language.def().walker {
        Walker::Text(format) => format,
        Walker::Tree(_) | Walker::TypeScript => TextFormat::Document,
    };
    let (symbols, comments) = match format {
        TextFormat::Markdown => (headed(&text, &markdown_headings(&text)), Vec::new()),
        TextFormat::Rst => (headed(&text, &rst_headings(&text)), Vec::new()),
        TextFormat::Yaml => (yaml(&text), text.hash_comments()),
        TextFormat::Json => (json(&text), Vec::new()),
        TextFormat::Toml => (toml(&text), text.hash_comments()),
        TextFormat::Dockerfile => (dockerfile(&text), text.hash_comments()),
        TextFormat::Shell => (shell(&text), text.hash_comments()),
        TextFormat::Document => (Vec::new(), Vec::new()),
    };
    let symbols = if symbols.is_empty() {
        text.whole("document", SymbolKind::Document)
            .into_iter()
            .collect()
    } else {
        symbols
    };
    ParsedFile {
        language,
        symbols,
        imports: Vec::new(),
        identifiers: Vec::new(),
        comments,
        diagnostics: Vec::new(),
        line_count: text.lines.len() as u32,
        refs: Default::default(),
    }
}

/// Most names [`mentions`] returns for one text.
pub const MAX_MENTIONS: usize = 12;

/// The code names a piece of documentation mentions in inline code (`` `validateToken` ``,
/// `` `TokenService.validate()` ``, ``` ``parse_args`` ```): `(parents, name)` for each
/// span that is an identifier or a dotted / `::` path of identifiers (call parentheses
/// dropped), distinct, in order of appearance, at most [`MAX_MENTIONS`]. Fenced code is
/// not read (it is an example, not a reference).
pub fn mentions(text: &str) -> Vec<(Vec<String>, String)> {
    let mut out: Vec<(Vec<String>, String)> = Vec::new();
    let mut fenced = None;
    for line in text.lines() {
        if let Some(f) = fence(line) {
            fenced = match fenced {
                Some(open) if open == f => None,
                None => Some(f),
                other => other,
            };
            continue;
        }
        if fenced.is_some() {
            continue;
        }
        for span in code_spans(line) {
            let span = span.trim().trim_end_matches("()");
            let parts: Vec<&str> = span.split(['.', ':']).filter(|p| !p.is_empty()).collect();
            let identifier = |p: &&str| {
                p.starts_with(|c: char| c.is_alphabetic() || c == '_')
                    && p.chars().all(|c| c.is_alphanumeric() || c == '_')
            };
            if parts.is_empty() || !parts.iter().all(identifier) {
                continue;
            }
            let Some((name, parents)) = parts.split_last() else {
                continue;
            };
            // A bare lower-case word is prose in code font (`true`, `npm`), not a
            // reference: a name has a capital, an underscore or a digit in it.
            if parents.is_empty()
                && !name
                    .chars()
                    .any(|c| c.is_uppercase() || c == '_' || c.is_ascii_digit())
            {
                continue;
            }
            let mention = (
                parents.iter().map(|p| (*p).to_string()).collect(),
                (*name).to_string(),
            );
            if !out.contains(&mention) {
                out.push(mention);
            }
            if out.len() == MAX_MENTIONS {
                return out;
            }
        }
    }
    out
}

/// The inline code spans of one line: text between a run of backticks and the next run
/// of the same length.
fn code_spans(line: &str) -> Vec<&str> {
    let bytes = line.as_bytes();
    let run_at = |i: usize| bytes[i..].iter().take_while(|&&b| b == b'`').count();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let open = run_at(i);
        let start = i + open;
        let mut j = start;
        let mut closed = None;
        while j < bytes.len() {
            if bytes[j] == b'`' {
                let run = run_at(j);
                if run == open {
                    closed = Some(j);
                    break;
                }
                j += run;
            } else {
                j += 1;
            }
        }
        match closed {
            Some(end) => {
                out.push(&line[start..end]);
                i = end + open;
            }
            None => break,
        }
    }
    out
}

/// A source split into lines, with their byte offsets.
struct Text<'a> {
    source: &'a str,
    /// Lines without their `\n` (a `\r` trimmed).
    lines: Vec<&'a str>,
    /// Byte offset of each line's start.
    starts: Vec<usize>,
}

impl<'a> Text<'a> {
    fn new(source: &'a str) -> Self {
        let mut lines = Vec::new();
        let mut starts = Vec::new();
        let mut at = 0;
        for raw in source.split('\n') {
            starts.push(at);
            at += raw.len() + 1;
            lines.push(raw.strip_suffix('\r').unwrap_or(raw));
        }
        // A final newline ends the last line rather than starting an empty one.
        if source.ends_with('\n') {
            lines.pop();
            starts.pop();
        }
        Self {
            source,
            lines,
            starts,
        }
    }

    fn source_bytes(&self) -> &[u8] {
        self.source.as_bytes()
    }

    /// The line (0-based) holding byte `offset`.
    fn line_of(&self, offset: usize) -> usize {
        self.starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1)
    }

    fn blank(&self, i: usize) -> bool {
        self.lines.get(i).is_none_or(|l| l.trim().is_empty())
    }

    /// Byte just past line `i`'s text.
    fn end_of(&self, i: usize) -> usize {
        self.starts[i] + self.lines[i].len()
    }

    /// The last non-blank line in `from..=to`, if any.
    fn last_filled(&self, from: usize, to: usize) -> Option<usize> {
        (from..=to).rev().find(|&i| !self.blank(i))
    }

    /// A symbol over lines `from..=to` (0-based; trailing blank lines dropped), whose
    /// body starts after `head` lines; `None` when the lines are all blank.
    fn unit(
        &self,
        kind: SymbolKind,
        name: &str,
        from: usize,
        to: usize,
        head: usize,
    ) -> Option<ParsedSymbol> {
        let to = self.last_filled(from, to.min(self.lines.len().checked_sub(1)?))?;
        let from = (from..=to).find(|&i| !self.blank(i))?;
        let body_line = from + head;
        let mut unit = ParsedSymbol::bare(
            kind,
            name.to_string(),
            LineRange {
                start: from as u32 + 1,
                end: to as u32 + 1,
            },
            ByteRange {
                start: self.starts[from],
                end: self.end_of(to),
            },
        );
        unit.body = (head > 0 && body_line <= to).then(|| ByteRange {
            start: self.starts[body_line],
            end: self.end_of(to),
        });
        unit.signature = crate::text::collapse_truncate(self.lines[from], 200);
        Some(unit)
    }

    /// The whole file as one unit.
    fn whole(&self, name: &str, kind: SymbolKind) -> Option<ParsedSymbol> {
        self.unit(kind, name, 0, self.lines.len().checked_sub(1)?, 0)
    }

    /// Byte spans of lines that are `#` comments.
    fn hash_comments(&self) -> Vec<ByteRange> {
        (0..self.lines.len())
            .filter(|&i| self.lines[i].trim_start().starts_with('#'))
            .map(|i| ByteRange {
                start: self.starts[i],
                end: self.end_of(i),
            })
            .collect()
    }
}

/// A heading: its line, level (1 = top), title, and how many lines it takes.
struct Heading {
    line: usize,
    level: usize,
    title: String,
    lines: usize,
}

impl Heading {
    /// A title on line `line` with its underline on the next.
    fn underlined(line: usize, level: usize, title: &str) -> Heading {
        Heading {
            line,
            level,
            title: title.trim().to_string(),
            lines: 2,
        }
    }
}

/// Sections of headed text, nested by level: the text before the first heading is a
/// `preamble`.
fn headed(text: &Text, headings: &[Heading]) -> Vec<ParsedSymbol> {
    let Some(first) = headings.first() else {
        return Vec::new();
    };
    let mut roots = Vec::new();
    if first.line > 0
        && let Some(mut preamble) = text.unit(SymbolKind::Section, "preamble", 0, first.line - 1, 0)
    {
        preamble.native_kind = Some("preamble".into());
        roots.push(preamble);
    }
    roots.extend(sections(text, headings, text.lines.len() - 1, 0, None));
    roots
}

/// The sections of `headings` (all at or below the first one's level) up to line `end`.
fn sections(
    text: &Text,
    headings: &[Heading],
    end: usize,
    depth: u32,
    parent: Option<&str>,
) -> Vec<ParsedSymbol> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < headings.len() {
        let h = &headings[i];
        // This section runs to the next heading of its level or above.
        let next = headings[i + 1..]
            .iter()
            .position(|n| n.level <= h.level)
            .map(|p| i + 1 + p);
        let last = next.map_or(end, |n| headings[n].line - 1);
        if let Some(mut section) = text.unit(SymbolKind::Section, &h.title, h.line, last, h.lines) {
            section.native_kind = Some(format!("h{}", h.level));
            section.depth = depth;
            section.parent_name = parent.map(str::to_string);
            let inner = &headings[i + 1..next.unwrap_or(headings.len())];
            section.children = sections(text, inner, last, depth + 1, Some(&h.title));
            out.push(section);
        }
        i = next.unwrap_or(headings.len());
    }
    out
}

/// A fence opener or closer (```` ``` ```` or `~~~`, up to three spaces in).
fn fence(line: &str) -> Option<&str> {
    let t = line.trim_start_matches(' ');
    if line.len() - t.len() > 3 {
        return None;
    }
    ["```", "~~~"].into_iter().find(|f| t.starts_with(f))
}

fn markdown_headings(text: &Text) -> Vec<Heading> {
    let mut out = Vec::new();
    let mut open_fence: Option<&str> = None;
    let mut i = 0;
    // YAML front matter is part of the preamble.
    if text.lines.first().is_some_and(|l| l.trim_end() == "---")
        && let Some(close) = (1..text.lines.len()).find(|&j| text.lines[j].trim_end() == "---")
    {
        i = close + 1;
    }
    while i < text.lines.len() {
        let line = text.lines[i];
        if let Some(f) = fence(line) {
            open_fence = match open_fence {
                Some(open) if open == f => None,
                None => Some(f),
                other => other,
            };
            i += 1;
            continue;
        }
        if open_fence.is_some() {
            i += 1;
            continue;
        }
        let t = line.trim_start_matches(' ');
        if line.len() - t.len() <= 3 && t.starts_with('#') {
            let level = t.chars().take_while(|&c| c == '#').count();
            let rest = &t[level..];
            if level <= 6 && (rest.is_empty() || rest.starts_with([' ', '\t'])) {
                let title = rest.trim().trim_end_matches('#').trim();
                out.push(Heading {
                    line: i,
                    level,
                    title: if title.is_empty() {
                        format!("h{level}")
                    } else {
                        title.to_string()
                    },
                    lines: 1,
                });
                i += 1;
                continue;
            }
        }
        // Setext: a paragraph line underlined with `=` (level 1) or `-` (level 2).
        if let Some(next) = text.lines.get(i + 1) {
            let u = next.trim();
            let indent_ok = next.len() - next.trim_start_matches(' ').len() <= 3;
            let plain = !line.trim().is_empty()
                && !line
                    .trim_start()
                    .starts_with(['-', '*', '+', '>', '|', '<'])
                && line.len() - line.trim_start().len() <= 3;
            if plain && indent_ok && !u.is_empty() {
                let level = if u.chars().all(|c| c == '=') {
                    Some(1)
                } else if u.chars().all(|c| c == '-') && u.len() >= 2 {
                    Some(2)
                } else {
                    None
                };
                if let Some(level) = level {
                    out.push(Heading::underlined(i, level, line));
                    i += 2;
                    continue;
                }
            }
        }
        i += 1;
    }
    out
}

/// Whether `line` is an RST adornment: one punctuation character repeated (3+ times).
fn adornment(line: &str) -> Option<char> {
    let t = line.trim_end();
    let c = t.chars().next()?;
    let punctuation = "=-~^\"'`*+#:._<>!$%&,;/?@[\\]{|}()";
    (t.len() >= 3 && punctuation.contains(c) && t.chars().all(|x| x == c)).then_some(c)
}

fn rst_headings(text: &Text) -> Vec<Heading> {
    let mut styles: Vec<(char, bool)> = Vec::new();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < text.lines.len() {
        let (line, next) = (text.lines[i], text.lines[i + 1]);
        // Overline, title, underline.
        if let Some(c) = adornment(line)
            && !next.trim().is_empty()
            && adornment(next).is_none()
            && text.lines.get(i + 2).and_then(|u| adornment(u)) == Some(c)
        {
            let level = level_of(&mut styles, (c, true));
            out.push(Heading {
                line: i,
                level,
                title: next.trim().to_string(),
                lines: 3,
            });
            i += 3;
            continue;
        }
        if !line.trim().is_empty()
            && !line.starts_with([' ', '\t'])
            && adornment(line).is_none()
            && let Some(c) = adornment(next)
            && next.trim_end().len() >= line.trim_end().chars().count().min(3)
        {
            let level = level_of(&mut styles, (c, false));
            out.push(Heading::underlined(i, level, line));
            i += 2;
            continue;
        }
        i += 1;
    }
    out
}

/// The level of an adornment style: the order in which styles first appear (1-based).
fn level_of(styles: &mut Vec<(char, bool)>, style: (char, bool)) -> usize {
    match styles.iter().position(|s| *s == style) {
        Some(p) => p + 1,
        None => {
            styles.push(style);
            styles.len()
        }
    }
}

/// The key a YAML line at its indentation defines (`name:` or `"name":`), if it does.
fn yaml_key(line: &str) -> Option<&str> {
    let t = line.trim_start();
    if t.starts_with(['#', '-', '%', '&', '*', '!', '[', '{', '|', '>']) || t.starts_with("---") {
        return None;
    }
    let (key, rest) = if let Some(quoted) = t.strip_prefix('"') {
        let end = quoted.find('"')?;
        (&quoted[..end], &quoted[end + 1..])
    } else if let Some(quoted) = t.strip_prefix('\'') {
        let end = quoted.find('\'')?;
        (&quoted[..end], &quoted[end + 1..])
    } else {
        let colon = t
            .find(": ")
            .or_else(|| t.strip_suffix(':').map(|k| k.len()))?;
        (&t[..colon], &t[colon..])
    };
    let rest = rest.trim_start();
    (rest.starts_with(':') && !key.trim().is_empty() && !key.contains(" #")).then(|| key.trim())
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches([' ', '\t']).len()
}

/// Units starting at `starts` (line, name) over lines `from..=to`: each runs to the line
/// before the next; the first reaches back to `from`.
fn split_at(
    text: &Text,
    kind: SymbolKind,
    starts: &[(usize, String)],
    from: usize,
    to: usize,
) -> Vec<ParsedSymbol> {
    let mut out = Vec::new();
    for (k, (line, name)) in starts.iter().enumerate() {
        let first = if k == 0 { from } else { *line };
        let last = starts.get(k + 1).map_or(to, |(next, _)| next - 1);
        if let Some(mut unit) = text.unit(kind, name, first, last, 1) {
            if unit.range.start as usize - 1 != *line {
                // Lines before the key (comments, `---`) are the unit's too; its body
                // still starts after the key.
                unit.signature = crate::text::collapse_truncate(text.lines[*line], 200);
                unit.body = (*line < last.min(unit.range.end as usize - 1)).then(|| ByteRange {
                    start: text.starts[line + 1],
                    end: unit.bytes.end,
                });
            }
            out.push(unit);
        }
    }
    out
}

fn yaml(text: &Text) -> Vec<ParsedSymbol> {
    let n = text.lines.len();
    let tops: Vec<(usize, String)> = (0..n)
        .filter(|&i| indent(text.lines[i]) == 0)
        .filter_map(|i| yaml_key(text.lines[i]).map(|k| (i, k.to_string())))
        .collect();
    if tops.is_empty() || n == 0 {
        return Vec::new();
    }
    let mut units = split_at(text, SymbolKind::Setting, &tops, 0, n - 1);
    for unit in &mut units {
        let (from, to) = (unit.range.start as usize - 1, unit.range.end as usize - 1);
        let Some(key_line) = tops
            .iter()
            .map(|(l, _)| *l)
            .find(|l| (from..=to).contains(l))
        else {
            continue;
        };
        // Second-level keys: the indentation of the first indented key under it.
        let child_indent = (key_line + 1..=to)
            .filter(|&i| !text.blank(i) && !text.lines[i].trim_start().starts_with('#'))
            .map(|i| indent(text.lines[i]))
            .find(|&d| d > 0);
        let Some(child_indent) = child_indent else {
            continue;
        };
        let children: Vec<(usize, String)> = (key_line + 1..=to)
            .filter(|&i| indent(text.lines[i]) == child_indent)
            .filter_map(|i| yaml_key(text.lines[i]).map(|k| (i, k.to_string())))
            .collect();
        if children.len() < 2 {
            continue;
        }
        let mut nested = split_at(text, SymbolKind::Setting, &children, children[0].0, to);
        for child in &mut nested {
            child.depth = 1;
            child.parent_name = Some(unit.name.clone());
        }
        unit.children = nested;
    }
    units
}

/// Lines where the root object's keys start (one per line: later keys on a line belong
/// to the first), with the key.
fn json_keys(text: &Text) -> Vec<(usize, String)> {
    let bytes = text.source_bytes();
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    let mut expect_key = false;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                if depth == 1 && expect_key {
                    let line = text.line_of(start);
                    let key =
                        String::from_utf8_lossy(&bytes[start..i.min(bytes.len())]).into_owned();
                    if out.last().is_none_or(|(l, _)| *l != line) {
                        out.push((line, key));
                    }
                    expect_key = false;
                }
            }
            b'{' | b'[' => {
                depth += 1;
                expect_key = depth == 1 && bytes[i] == b'{';
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' if depth == 1 => expect_key = true,
            _ => {}
        }
        i += 1;
    }
    out
}

fn json(text: &Text) -> Vec<ParsedSymbol> {
    let keys = json_keys(text);
    // A one- or two-line object is one unit; so is anything that is not an object.
    if keys.len() < 2 || text.lines.len() < 3 {
        return Vec::new();
    }
    split_at(text, SymbolKind::Setting, &keys, 0, text.lines.len() - 1)
}

fn toml(text: &Text) -> Vec<ParsedSymbol> {
    let n = text.lines.len();
    let mut starts: Vec<(usize, String)> = Vec::new();
    for (i, line) in text.lines.iter().enumerate() {
        let t = line.trim();
        if t.starts_with('[') && t.ends_with(']') {
            let name = t.trim_matches(|c| c == '[' || c == ']').trim();
            starts.push((i, name.to_string()));
        }
    }
    if starts.is_empty() || n == 0 {
        return Vec::new();
    }
    // Keys before the first table.
    let first_table = starts[0].0;
    if (0..first_table).any(|i| !text.blank(i) && !text.lines[i].trim_start().starts_with('#')) {
        let root_line = (0..first_table)
            .find(|&i| !text.blank(i) && !text.lines[i].trim_start().starts_with('#'))
            .unwrap_or(0);
        starts.insert(0, (root_line, "root".to_string()));
    }
    split_at(text, SymbolKind::Setting, &starts, 0, n - 1)
}

fn dockerfile(text: &Text) -> Vec<ParsedSymbol> {
    let n = text.lines.len();
    let stages: Vec<(usize, String)> = (0..n)
        .filter_map(|i| {
            let words: Vec<&str> = text.lines[i].split_whitespace().collect();
            if !words.first()?.eq_ignore_ascii_case("FROM") {
                return None;
            }
            let image = words.iter().skip(1).find(|w| !w.starts_with("--"))?;
            let name = match words.iter().position(|w| w.eq_ignore_ascii_case("AS")) {
                Some(p) => words.get(p + 1).copied().unwrap_or(image),
                None => image,
            };
            Some((i, name.to_string()))
        })
        .collect();
    if stages.is_empty() || n == 0 {
        return Vec::new();
    }
    let mut units = split_at(text, SymbolKind::Section, &stages, 0, n - 1);
    for unit in &mut units {
        unit.native_kind = Some("stage".into());
    }
    units
}

/// The function a shell line opens (`name() {`, `function name {`), if it does.
fn shell_function(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let t = t
        .strip_prefix("function ")
        .map(str::trim_start)
        .unwrap_or(t);
    let end = t
        .find(|c: char| {
            !(c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == ':' || c == '.')
        })
        .unwrap_or(t.len());
    let (name, rest) = t.split_at(end);
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let rest = rest.trim_start();
    let rest = rest
        .strip_prefix("()")
        .map(str::trim_start)
        .or_else(|| line.trim_start().starts_with("function ").then_some(rest))?;
    (rest.is_empty() || rest.starts_with('{') || rest.starts_with('(')).then_some(name)
}

fn shell(text: &Text) -> Vec<ParsedSymbol> {
    let n = text.lines.len();
    let mut out = Vec::new();
    let mut loose: Option<usize> = None;
    let mut i = 0;
    let flush = |from: Option<usize>, to: usize, out: &mut Vec<ParsedSymbol>| {
        let Some(from) = from else { return };
        let Some(first) =
            (from..=to).find(|&k| !text.blank(k) && !text.lines[k].trim_start().starts_with('#'))
        else {
            return;
        };
        let name = crate::text::collapse_truncate(text.lines[first], 60);
        if let Some(unit) = text.unit(SymbolKind::Statement, &name, from, to, 0) {
            out.push(unit);
        }
    };
    while i < n {
        if let Some(name) = shell_function(text.lines[i]) {
            let own = indent(text.lines[i]);
            let close = (i + 1..n)
                .find(|&k| text.lines[k].trim() == "}" && indent(text.lines[k]) <= own)
                .or_else(|| text.lines[i].trim_end().ends_with('}').then_some(i))
                .unwrap_or(n - 1);
            if i > 0 {
                flush(loose.take(), i - 1, &mut out);
            }
            loose = None;
            if let Some(mut f) = text.unit(SymbolKind::Function, name, i, close, 1) {
                f.signature = crate::text::collapse_truncate(text.lines[i], 200);
                out.push(f);
            }
            i = close + 1;
            continue;
        }
        loose.get_or_insert(i);
        i += 1;
    }
    if n > 0 {
        flush(loose, n - 1, &mut out);
    }
    if out.iter().all(|s| s.kind == SymbolKind::Statement) {
        // No functions: the script is one unit.
        return Vec::new();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(symbols: &[ParsedSymbol]) -> Vec<String> {
        let mut out = Vec::new();
        for s in symbols {
            for x in s.walk() {
                out.push(format!(
                    "{}{}@{}-{}",
                    "  ".repeat(x.depth as usize),
                    x.name,
                    x.range.start,
                    x.range.end
                ));
            }
        }
        out
    }

    fn parsed(language: Language, source: &str) -> Vec<String> {
        names(&parse(language, source).symbols)
    }

    #[test]
    fn markdown_sections_nest_by_level_and_skip_code_fences() {
        let md = "Intro line.\n\n# Sextant\n\nText.\n\n## Install\n\n```sh\n# not a heading\n```\n\n### From source\nBuild it.\n\nUsage\n-----\nRun it.\n";
        assert_eq!(
            parsed(Language::MARKDOWN, md),
            [
                "preamble@1-1",
                "Sextant@3-18",
                "  Install@7-14",
                "    From source@13-14",
                "  Usage@16-18",
            ]
        );
    }

    #[test]
    fn rst_titles_take_levels_in_order_of_appearance() {
        let rst =
            "=====\nTitle\n=====\n\nIntro.\n\nSection\n-------\n\nBody.\n\nOther\n-----\nMore.\n";
        assert_eq!(
            parsed(Language::RST, rst),
            ["Title@1-14", "  Section@7-10", "  Other@12-14"]
        );
    }

    #[test]
    fn yaml_keys_and_their_children() {
        let yaml = "# compose\nservices:\n  web:\n    image: nginx\n  db:\n    image: postgres\nvolumes:\n  data: {}\n";
        assert_eq!(
            parsed(Language::YAML, yaml),
            ["services@1-6", "  web@3-4", "  db@5-6", "volumes@7-8"]
        );
    }

    #[test]
    fn json_top_level_keys_cover_the_object() {
        let json = "{\n  \"name\": \"x\",\n  \"scripts\": {\n    \"test\": \"jest\"\n  },\n  \"private\": true\n}\n";
        assert_eq!(
            parsed(Language::JSON, json),
            ["name@1-2", "scripts@3-5", "private@6-7"]
        );
        assert_eq!(parsed(Language::JSON, "[1, 2]\n"), ["document@1-1"]);
    }

    #[test]
    fn toml_tables_and_dockerfile_stages() {
        let toml = "# top\nname = \"x\"\n\n[dependencies]\nserde = \"1\"\n\n[tool.ruff]\nline-length = 100\n";
        assert_eq!(
            parsed(Language::TOML, toml),
            ["root@1-2", "dependencies@4-5", "tool.ruff@7-8"]
        );
        let docker = "ARG V=1\nFROM rust:1 AS build\nRUN cargo build\n\nFROM debian:13\nCOPY --from=build /x /x\n";
        assert_eq!(
            parsed(Language::DOCKERFILE, docker),
            ["build@1-3", "debian:13@5-6"]
        );
    }

    #[test]
    fn shell_functions_and_the_lines_between() {
        let sh = "#!/bin/sh\nset -e\n\nbuild() {\n  cargo build\n}\n\nfunction test_all {\n  cargo test\n}\nbuild\n";
        assert_eq!(
            parsed(Language::SHELL, sh),
            ["set -e@1-2", "build@4-6", "test_all@8-10", "build@11-11"]
        );
        assert_eq!(parsed(Language::SHELL, "echo hi\n"), ["document@1-1"]);
    }

    #[test]
    fn inline_code_names_are_mentions() {
        let md = "Call `validateToken()` or `TokenService.validate`; set `true`.\n\n```js\n`notThis`\n```\nSee ``parse_args`` and `a b`.\n";
        assert_eq!(
            mentions(md),
            [
                (vec![], "validateToken".to_string()),
                (vec!["TokenService".to_string()], "validate".to_string()),
                (vec![], "parse_args".to_string()),
            ]
        );
    }

    #[test]
    fn any_text_parses_without_panicking() {
        for language in Language::all() {
            for text in [
                "", "\n", "#", "{\"a", "---\n---", "a\n=\n", "x() {", "[", "\"\\", "FROM",
            ] {
                let _ = parse(language, text);
            }
        }
    }
}
