//! The names bound by nested scopes during a graph walk, looked up in constant time
//! however deep the scopes nest: each name keeps its own stack of bindings, innermost
//! last, instead of each lookup searching every open scope (100,000 nested callbacks
//! made that walk quadratic).

use std::collections::HashMap;

/// Open scopes and the bindings they make.
#[derive(Debug)]
pub(crate) struct Scopes<L> {
    /// Every bound name's bindings, innermost last.
    bound: HashMap<String, Vec<L>>,
    /// The names each open scope bound, innermost last.
    opened: Vec<Vec<String>>,
}

impl<L> Default for Scopes<L> {
    fn default() -> Self {
        Self {
            bound: HashMap::new(),
            opened: Vec::new(),
        }
    }
}

impl<L> Scopes<L> {
    /// Opens a scope binding `names`.
    pub fn open(&mut self, names: HashMap<String, L>) {
        let mut opened = Vec::with_capacity(names.len());
        for (name, local) in names {
            self.bound.entry(name.clone()).or_default().push(local);
            opened.push(name);
        }
        self.opened.push(opened);
    }

    /// Closes the innermost scope, unbinding its names; nothing when none is open.
    pub fn close(&mut self) {
        for name in self.opened.pop().unwrap_or_default() {
            if let Some(stack) = self.bound.get_mut(&name) {
                stack.pop();
                if stack.is_empty() {
                    self.bound.remove(&name);
                }
            }
        }
    }

    /// The innermost binding of `name`.
    pub fn get(&self, name: &str) -> Option<&L> {
        self.bound.get(name).and_then(|b| b.last())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_innermost_binding_wins_until_its_scope_closes() {
        let mut scopes = Scopes::default();
        scopes.open(HashMap::from([("x".to_string(), 1), ("y".to_string(), 2)]));
        scopes.open(HashMap::from([("x".to_string(), 3)]));
        assert_eq!(scopes.get("x"), Some(&3));
        assert_eq!(scopes.get("y"), Some(&2));
        scopes.close();
        assert_eq!(scopes.get("x"), Some(&1));
        scopes.close();
        assert_eq!(scopes.get("x"), None);
        scopes.close();
        assert_eq!(scopes.get("y"), None);
    }
}
