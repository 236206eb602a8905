//! Rendering a symbol's content with its body-bearing descendants collapsed.

use crate::parse::{ByteRange, ParsedSymbol};
use crate::text::dedent_tail;

/// The bodies to collapse when rendering `symbol`: for each child, its body when it is
/// body-bearing, otherwise (recursively) those of its own children. Sorted by offset,
/// never overlapping.
pub fn collapsed_bodies(symbol: &ParsedSymbol) -> Vec<ByteRange> {
    let mut out = Vec::new();
    let mut stack: Vec<&ParsedSymbol> = symbol.children.iter().rev().collect();
    while let Some(child) = stack.pop() {
        match child.body {
            Some(body) if symbol.bytes.contains(&body) => out.push(body),
            _ => stack.extend(child.children.iter().rev()),
        }
    }
    out.sort();
    out
}

/// `source[range]` with every range in `collapsed` replaced by `placeholder` (the
/// language's collapsed body), and the following lines dedented by `column` (the
/// symbol's starting column).
pub fn render(
    source: &str,
    range: ByteRange,
    collapsed: &[ByteRange],
    column: usize,
    placeholder: &str,
) -> String {
    let mut out = String::with_capacity(range.end.saturating_sub(range.start));
    let mut at = range.start;
    for body in collapsed {
        if body.start < at {
            continue;
        }
        out.push_str(source.get(at..body.start).unwrap_or(""));
        out.push_str(placeholder);
        at = body.end;
    }
    out.push_str(source.get(at..range.end).unwrap_or(""));
    dedent_tail(&out, column)
}
