//! A grep answer as text: matching lines grouped by file, with context, and how to get
//! more (pure).

use std::fmt::Write;

use crate::search::grep::{GrepResponse, GrepStop};

/// `answer` for an assistant or a terminal:
///
/// ```text
/// 3 matches in 2 files (read 4 of 1,204 indexed files)
///
/// api: src/auth/token.ts (typescript, version 3fa2c1d)
///   41: export function validateToken(raw: string) {
///   42-   …context…
/// ```
///
/// Lines are `N:` for a match and `N-` for context, as grep prints them; a file's header
/// repeats when a repository changes. The last line says why the answer stopped early
/// and gives the cursor to go on with.
pub fn render(answer: &GrepResponse) -> String {
    let mut out = String::new();
    let files = {
        let mut seen: Vec<(&str, &str)> = answer
            .matches
            .iter()
            .map(|m| (m.repository.as_str(), m.path.as_str()))
            .collect();
        seen.dedup();
        seen.len()
    };
    let _ = writeln!(
        out,
        "{} {} in {} {} (read {} of {} indexed files{})",
        answer.matches.len(),
        plural(answer.matches.len(), "match", "matches"),
        files,
        plural(files, "file", "files"),
        answer.files_read,
        answer.files_indexed,
        if answer.index_used {
            ""
        } else {
            "; the pattern has no three literal characters in a row, so every file was read"
        }
    );
    let mut current: Option<(&str, &str)> = None;
    let mut last_line = 0u64;
    for m in &answer.matches {
        let here = (m.repository.as_str(), m.path.as_str());
        if current != Some(here) {
            let version: String = m
                .commit
                .as_deref()
                .unwrap_or(&m.content_hash)
                .chars()
                .take(10)
                .collect();
            let _ = write!(
                out,
                "\n{}: {} ({}, version {})\n",
                m.repository, m.path, m.language, version
            );
            current = Some(here);
            last_line = 0;
        }
        let first_before = m.line.saturating_sub(m.before.len() as u64);
        if last_line > 0 && first_before > last_line + 1 {
            out.push_str("  --\n");
        }
        for (i, line) in m.before.iter().enumerate() {
            let n = first_before + i as u64;
            if n > last_line {
                let _ = writeln!(out, "  {n}- {line}");
            }
        }
        let _ = writeln!(out, "  {}: {}", m.line, m.text);
        last_line = m.line;
        for (i, line) in m.after.iter().enumerate() {
            let _ = writeln!(out, "  {}- {line}", m.line + 1 + i as u64);
        }
        last_line += m.after.len() as u64;
    }
    if let Some(stop) = answer.stopped {
        let why = match stop {
            GrepStop::Limit => "more matches than `limit`",
            GrepStop::Budget if answer.matches.is_empty() => {
                "the first match alone would exceed the token budget: raise `maxTokens`"
            }
            GrepStop::Budget => "the next match would exceed the token budget",
            GrepStop::Deadline => "the search ran out of time",
        };
        match &answer.next_cursor {
            Some(cursor) => {
                let _ = write!(
                    out,
                    "\nStopped early ({why}): to see more, call again with cursor \"{cursor}\".\n"
                );
            }
            None => {
                let _ = write!(out, "\nStopped early ({why}).\n");
            }
        }
    }
    out
}

fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}
