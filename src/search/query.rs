//! Query classification: `symbol = [file >] [Parent >] name` lookups versus natural
//! language (pure).

use serde::Serialize;

/// A parsed `symbol = …` path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SymbolPath {
    /// Repository-relative file the lookup is scoped to, when the first segment names one.
    pub file: Option<String>,
    /// Enclosing symbols, outermost first (`Outer > Inner > name` → `[Outer, Inner]`).
    pub parents: Vec<String>,
    /// The symbol's own name.
    pub name: String,
}

/// What a query asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Query {
    /// Exact symbol lookup; no vectors, no reranking.
    Symbol(SymbolPath),
    /// Natural-language search.
    Text(String),
}

/// Whether a path segment names a file rather than a symbol: it has a `/` or ends with a
/// source extension Sextant parses.
fn is_file_segment(segment: &str) -> bool {
    segment.contains('/')
        || crate::parse::Language::from_path(std::path::Path::new(segment)).is_some()
}

/// Parses a `symbol = …` query; `None` when `query` is not a symbol lookup (no prefix, or
/// nothing after it).
///
/// ```
/// use sextant::search::{SymbolPath, parse_symbol_query};
/// let p = parse_symbol_query("symbol = src/auth.ts > TokenService > validate").unwrap();
/// assert_eq!(p, SymbolPath {
///     file: Some("src/auth.ts".into()),
///     parents: vec!["TokenService".into()],
///     name: "validate".into(),
/// });
/// assert!(parse_symbol_query("how are tokens validated").is_none());
/// ```
pub fn parse_symbol_query(query: &str) -> Option<SymbolPath> {
    let rest = query.trim_start();
    let rest = rest
        .get(..6)
        .filter(|p| p.eq_ignore_ascii_case("symbol"))
        .map(|_| rest[6..].trim_start())?;
    let rest = rest.strip_prefix('=')?.trim();
    let mut segments: Vec<String> = rest
        .split('>')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let name = segments.pop()?;
    let file = match segments.first() {
        Some(first) if is_file_segment(first) => Some(first.trim_start_matches("./").to_string()),
        _ => None,
    };
    let parents = segments
        .into_iter()
        .skip(usize::from(file.is_some()))
        .collect();
    Some(SymbolPath {
        file,
        parents,
        name,
    })
}

/// Classifies a query.
pub fn classify(query: &str) -> Query {
    parse_symbol_query(query).map_or_else(|| Query::Text(query.trim().to_string()), Query::Symbol)
}

impl SymbolPath {
    /// The ways to read this path: as written, then, when the name is qualified the way
    /// a language writes it (`Store::credit`, `Invoice.total`, `com.acme.Billing.charge`),
    /// with its qualifiers as parents (all of them, then the nearest only). A name that is
    /// itself dotted (Go's `Store.Add`, CommonJS `app.use`) still matches as written.
    pub fn readings(&self) -> Vec<SymbolPath> {
        let mut out = vec![self.clone()];
        let separator = if self.name.contains("::") { "::" } else { "." };
        let mut parts: Vec<&str> = self.name.split(separator).collect();
        let Some(name) = parts.pop().filter(|n| !n.is_empty()) else {
            return out;
        };
        if parts.is_empty() || parts.iter().any(|p| p.is_empty()) {
            return out;
        }
        let reading = |qualifiers: &[&str]| SymbolPath {
            file: self.file.clone(),
            parents: self
                .parents
                .iter()
                .cloned()
                .chain(qualifiers.iter().map(|q| q.to_string()))
                .collect(),
            name: name.to_string(),
        };
        out.push(reading(&parts));
        if parts.len() > 1 {
            out.push(reading(&parts[parts.len() - 1..]));
        }
        out
    }

    /// Whether a symbol with this `breadcrumb` (`A > B > name`) in file `path` matches:
    /// the name is equal, the parents are the breadcrumb's nearest ancestors (in order),
    /// and the file, when given, is `path` or a suffix of it at a `/` boundary.
    pub fn matches(&self, path: &str, breadcrumb: &str) -> bool {
        let mut parts: Vec<&str> = breadcrumb.split(" > ").collect();
        if parts.pop() != Some(self.name.as_str()) {
            return false;
        }
        if parts.len() < self.parents.len()
            || !parts[parts.len() - self.parents.len()..]
                .iter()
                .zip(&self.parents)
                .all(|(a, b)| *a == b)
        {
            return false;
        }
        match &self.file {
            None => true,
            Some(file) => path == file || path.ends_with(&format!("/{file}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(file: Option<&str>, parents: &[&str], name: &str) -> SymbolPath {
        SymbolPath {
            file: file.map(str::to_string),
            parents: parents.iter().map(|s| s.to_string()).collect(),
            name: name.into(),
        }
    }

    #[test]
    fn symbol_queries_parse_into_file_parents_and_name() {
        assert_eq!(
            parse_symbol_query("symbol = validateToken"),
            Some(path(None, &[], "validateToken"))
        );
        assert_eq!(
            parse_symbol_query("  Symbol=TokenService > validateToken "),
            Some(path(None, &["TokenService"], "validateToken"))
        );
        assert_eq!(
            parse_symbol_query("symbol = src/auth/tokenService.ts > TokenService > validateToken"),
            Some(path(
                Some("src/auth/tokenService.ts"),
                &["TokenService"],
                "validateToken"
            ))
        );
        assert_eq!(
            parse_symbol_query("symbol = util.ts > helper"),
            Some(path(Some("util.ts"), &[], "helper"))
        );
        assert_eq!(parse_symbol_query("symbol = "), None);
        assert_eq!(parse_symbol_query("symbols are great"), None);
        assert_eq!(parse_symbol_query("where is the symbol table"), None);
        assert!(matches!(classify("how does auth work"), Query::Text(_)));
    }

    #[test]
    fn qualified_names_are_read_with_their_qualifiers_as_parents() {
        let rust = parse_symbol_query("symbol = MemoryStore::credit").unwrap();
        assert!(
            rust.readings()
                .iter()
                .any(|r| r.matches("core/src/store/mod.rs", "MemoryStore > credit"))
        );
        let python = parse_symbol_query("symbol = models.py > Invoice.total").unwrap();
        let readings = python.readings();
        assert_eq!(readings[1], path(Some("models.py"), &["Invoice"], "total"));
        assert!(
            readings
                .iter()
                .any(|r| r.matches("app/models.py", "Invoice > total"))
        );
        // Fully qualified Java: the nearest qualifier is enough.
        let java = parse_symbol_query("symbol = com.acme.Billing.chargeNew").unwrap();
        assert!(
            java.readings()
                .iter()
                .any(|r| r.matches("B.java", "Billing > chargeNew"))
        );
        // A dotted name matches as written; plain names have one reading.
        let go = parse_symbol_query("symbol = Store.Add").unwrap();
        assert!(go.readings()[0].matches("store.go", "Store.Add"));
        assert_eq!(
            parse_symbol_query("symbol = a").unwrap().readings().len(),
            1
        );
        assert_eq!(
            parse_symbol_query("symbol = a.").unwrap().readings().len(),
            1
        );
    }

    #[test]
    fn matching_checks_name_parent_chain_and_file() {
        let p = path(None, &["TokenService"], "validate");
        assert!(p.matches("src/a.ts", "TokenService > validate"));
        assert!(p.matches("src/a.ts", "ns > TokenService > validate"));
        assert!(!p.matches("src/a.ts", "Other > validate"));
        assert!(!p.matches("src/a.ts", "validate"));
        let f = path(Some("auth/a.ts"), &[], "validate");
        assert!(f.matches("src/auth/a.ts", "validate"));
        assert!(!f.matches("src/notauth/a.ts", "validate"));
        assert!(!f.matches("src/b.ts", "validate"));
    }
}
