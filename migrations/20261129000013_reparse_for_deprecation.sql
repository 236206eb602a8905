-- Every indexed file is parsed again at its repository's next sync.
--
-- The parser now marks deprecated symbols (Java's `@Deprecated`, Rust's `#[deprecated]`,
-- a Python `@deprecated` decorator, `@deprecated` in JSDoc or Javadoc, a Go
-- `Deprecated:` paragraph, Sphinx's `.. deprecated::`, and everything inside them) with
-- a `deprecated` modifier, which search ranks below live code. Files indexed before
-- carry no such mark; a file whose record has neither hash nor modification time is
-- read and parsed again by the change check (a git source is diffed against nothing).
-- The chunks' texts are unchanged, so their vectors come from the embedding cache: the
-- cost is a parse of each file, not a model run.

UPDATE files SET content_hash = NULL, mtime_ms = NULL WHERE skip_reason IS NULL;
