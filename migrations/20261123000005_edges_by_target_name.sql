-- Edges by the name they point at: which statements import a file (`importers`,
-- `imports_of`: Scout's imports and re-exports, the incremental sync's dependents).
CREATE INDEX edges_to_name ON edges (repo_id, to_name);
