-- `edges_to_name (repo_id, to_name)` duplicated `edges_by_target_name (repo_id, kind,
-- to_name)` for every query that reads it (importers and `imports_of` both ask for
-- `kind = 'imports'`): 16 MB of a 1M-line index, and a write per edge, for nothing.
DROP INDEX IF EXISTS edges_to_name;
