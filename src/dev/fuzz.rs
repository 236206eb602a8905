//! The promises Sextant keeps on hostile input, as one check per fuzz target.
//!
//! The coverage-guided fuzzers in `fuzz/` (cargo-fuzz, libFuzzer) call these on every
//! input they generate, and `tests/it/robustness.rs` replays the kept corpus and every
//! crasher through the same functions, so a fixed crash stays fixed. Each function
//! returns when the input was handled and panics when a promise was broken. Pure: no
//! I/O, no global state.

use std::path::Path;

use crate::chunk::{ChunkOptions, chunk_file, outline::MAX_ENTRIES, outline_chunk};
use crate::conformance::{check_determinism, check_rules};
use crate::mcp::args::ToolArgs;
use crate::parse::{LANGUAGES, ParseError, ParseLimits, parse_bytes};
use crate::search::lexical::{MAX_QUERY_TERMS, lexical_query, query_terms};
use crate::search::options::{MAX_QUERY_BYTES, SearchOptions};
use crate::search::query::{classify, parse_symbol_query};

/// Parser and chunker: any bytes end in chunks or a skip reason (binary, not UTF-8, too
/// large); text keeps the blueprint's ten rules (on a tree recovered from syntax errors,
/// all but the two textual ones, 6 and 10), and chunking twice gives the same chunks. The
/// first byte picks the language: a row of the language table.
pub fn parse_and_chunk(data: &[u8]) {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    // The first byte picks the language (every row of the language table, in order).
    let def = &LANGUAGES[usize::from(pick) % LANGUAGES.len()];
    let name = &format!("fuzz.{}", def.extensions[0]);
    let parsed = match parse_bytes(Path::new(name), body, &ParseLimits::default()) {
        Ok(parsed) => parsed,
        Err(ParseError::Binary { .. } | ParseError::InvalidUtf8 { .. }) => return,
        Err(e) => panic!("{name}: text must parse or be skipped with a reason, got {e}"),
    };
    let source = std::str::from_utf8(body).expect("a parsed file is UTF-8");
    let chunks = chunk_file(name, source, &parsed, &ChunkOptions::default());
    let again = chunk_file(name, source, &parsed, &ChunkOptions::default());
    let mut violations = check_rules(source, &parsed, &chunks);
    if !parsed.diagnostics.is_empty() {
        // On a tree recovered from syntax errors, rules 6 and 10 judge text against
        // tokens the grammar split differently (`0express` reads as `0` and `express`),
        // so they are not promises there; the structural rules still are.
        violations.retain(|v| !matches!(v.rule, 6 | 10));
    }
    violations.extend(check_determinism(&chunks, &again));
    assert!(violations.is_empty(), "{name}: {violations:?}");
    // The file outline: the same twice, distinct from every chunk, and bounded (a
    // header of at most four lines, the entries, one line counting the rest).
    let outline = outline_chunk(name, source, &parsed, &chunks);
    assert_eq!(outline, outline_chunk(name, source, &parsed, &chunks));
    if let Some(o) = outline {
        assert!(
            chunks.iter().all(|c| c.id != o.id),
            "{name}: outline id reused"
        );
        let lines = o.content.lines().count();
        assert!(lines <= MAX_ENTRIES + 5, "{name}: {lines} outline lines");
    }
}

/// A REST search body (`POST /api/v1/search`: the query beside the flattened options,
/// as the API and the MCP tool read it).
#[derive(Debug, serde::Deserialize)]
struct SearchBody {
    query: String,
    #[serde(flatten)]
    options: SearchOptions,
}

/// Search request bodies: any JSON either fails to deserialize or validation, or is
/// accepted, and then everything built from it stays bounded: the path matcher compiles,
/// the store predicate is at most a few hundred KiB, the lexical query has at most
/// [`MAX_QUERY_TERMS`] terms.
pub fn search_request(data: &[u8]) {
    let Ok(body) = serde_json::from_slice::<SearchBody>(data) else {
        return;
    };
    search(&body.query, &body.options);
}

/// A search as the service receives it: rejected by validation, or bounded in all it
/// builds (see [`search_request`]).
fn search(question: &str, options: &SearchOptions) {
    if question.len() > MAX_QUERY_BYTES || options.validate().is_err() {
        return;
    }
    let filter = &options.filter;
    let matcher = filter
        .path_matcher()
        .expect("a validated filter's globs compile");
    let _ = matcher.is_match("src/index.ts");
    if let Some(sql) = filter.to_sql() {
        // Four lists of at most 100 entries of at most 1 KiB, each quoted (doubling at
        // worst) and wrapped in a clause.
        assert!(sql.len() < 4 * 100 * (2 * 1024 + 64), "{} bytes", sql.len());
    }
    query(question.as_bytes());
}

/// MCP JSON-RPC messages as a client posts them to `/mcp` (or writes them to stdio):
/// rmcp's envelope either rejects the bytes or reads a message that serializes and reads
/// back to the same message; a `tools/call` of one of Sextant's tools has arguments that
/// either fail to deserialize (the agent gets the error) or become a request the service
/// receives, and a search that passes validation stays bounded as [`search_request`]
/// promises.
pub fn mcp_message(data: &[u8]) {
    use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
    let Ok(message) = serde_json::from_slice::<ClientJsonRpcMessage>(data) else {
        return;
    };
    let written = serde_json::to_value(&message).expect("a read message serializes");
    let again: ClientJsonRpcMessage =
        serde_json::from_value(written.clone()).expect("a written message reads back");
    // What Sextant acts on survives the trip. (Not the whole message: rmcp keeps an
    // unknown member of a call's `params` when it reads bytes and drops it when it reads
    // a `Value`; nothing here reads such members.)
    let rewritten = serde_json::to_value(&again).expect("serializes");
    for member in ["jsonrpc", "id", "method", "result", "error"] {
        assert_eq!(
            rewritten.get(member),
            written.get(member),
            "`{member}` changed"
        );
    }
    for member in ["name", "arguments"] {
        assert_eq!(
            rewritten.pointer(&format!("/params/{member}")),
            written.pointer(&format!("/params/{member}")),
            "`params.{member}` changed"
        );
    }
    let ClientJsonRpcMessage::Request(request) = message else {
        return;
    };
    let ClientRequest::CallToolRequest(call) = request.request else {
        return;
    };
    let Some(Ok(arguments)) = ToolArgs::parse(&call.params.name, call.params.arguments) else {
        return;
    };
    match arguments {
        ToolArgs::Search(args) => {
            let (question, given) = args.into_search();
            search(&question, &given.apply(SearchOptions::default()));
        }
        // As `Service::symbol` asks: an exact lookup within at most one repository.
        ToolArgs::Symbol(args) => {
            let mut options = SearchOptions::default();
            options.filter.repositories = args.repository.into_iter().collect();
            search(&format!("symbol = {}", args.name), &options);
        }
        // A grep request is checked and compiled (pattern size, regex size, plan) without
        // panicking, whatever the agent sends.
        ToolArgs::Grep(args) => {
            let _ = crate::search::grep::CompiledGrep::new(&args.into_request());
        }
        // The others reach the store and the graph (the server-level replay in
        // `tests/it/mcp.rs` sends the kept inputs through them).
        ToolArgs::Scout(_)
        | ToolArgs::AddRepository(_)
        | ToolArgs::File(_)
        | ToolArgs::Repo(_)
        | ToolArgs::Compare(_)
        | ToolArgs::TrackRef(_)
        | ToolArgs::None => {}
    }
}

/// Queries: `symbol = …` paths and questions are classified without panicking, a parsed
/// symbol path matches what it names, and the lexical query stays within
/// [`MAX_QUERY_TERMS`] terms.
pub fn query(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = classify(text);
    if let Some(path) = parse_symbol_query(text) {
        let _ = path.matches("src/index.ts", "A > b");
    }
    let lexical = lexical_query(text);
    assert!(query_terms(&lexical).len() <= MAX_QUERY_TERMS, "{lexical}");
}
