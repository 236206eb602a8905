//! Code for developing Sextant, not for serving it: the checks the fuzz targets run
//! ([`fuzz`], shared with the corpus replay in `tests/it/robustness.rs`) and the mining
//! of training pairs for the code-search model ([`pairs`], run by `examples/mine_pairs.rs`
//! for `tools/train/`). Nothing in the pipeline calls it.

pub mod fuzz;
pub mod pairs;
pub mod registers;
