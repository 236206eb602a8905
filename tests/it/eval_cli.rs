//! The `sextant eval` contract, end to end through the real binary with the distilled
//! static model: a corpus directory with a sub-corpus named by the queries, a temporary
//! data dir, one results line per query in `score.py`'s format (paths relative to the
//! corpus root, 1-based inclusive lines, at most `--top` results), and the gold summary.

use std::process::Command;

use crate::support;

use support::write;

use support::models::{minilm, static_model};
use support::skip;

#[test]
fn eval_indexes_the_corpus_and_writes_score_py_results() {
    let (teacher, model) = match (minilm(), static_model()) {
        (Ok(t), Ok(s)) => (t, s),
        (Err(why), _) | (_, Err(why)) => return skip("sextant eval with the static model", why),
    };
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("corpus");
    let mini = corpus.join("mini");
    write(
        &mini,
        "src/retry.ts",
        "import { sleep } from './sleep';\n\nexport async function retryWithBackoff(task: () => Promise<void>, attempts: number) {\n  for (let i = 0; i < attempts; i++) {\n    try {\n      return await task();\n    } catch {\n      await sleep(2 ** i * 100);\n    }\n  }\n}\n",
    );
    write(
        &mini,
        "src/sleep.ts",
        "export function sleep(ms: number): Promise<void> {\n  return new Promise((resolve) => setTimeout(resolve, ms));\n}\n",
    );
    write(
        &mini,
        "src/color.ts",
        "export class Palette {\n  colors: string[] = [];\n  addColor(hex: string) {\n    this.colors.push(hex);\n  }\n}\n",
    );
    let queries = tmp.path().join("queries.jsonl");
    std::fs::write(
        &queries,
        concat!(
            r#"{"id": "q1", "query": "retry a failing task with exponential backoff", "corpus": "mini", "path": "src/retry.ts", "start_line": 3, "end_line": 11}"#,
            "\n",
            r#"{"id": "q2", "query": "add a color to the palette", "corpus": "mini", "gold": [{"path": "src/color.ts", "start_line": 3, "end_line": 5}]}"#,
            "\n",
            r#"{"id": "q3", "query": "symbol = sleep", "corpus": "mini"}"#,
            "\n"
        ),
    )
    .unwrap();
    let out = tmp.path().join("results.jsonl");
    let run = Command::new(env!("CARGO_BIN_EXE_sextant"))
        .current_dir(tmp.path())
        .args(["--embed-provider", "static", "--model-dir"])
        .arg(&teacher)
        .arg("--static-model-dir")
        .arg(&model)
        .args(["eval", "--top", "2", "--corpus"])
        .arg(&corpus)
        .arg("--queries")
        .arg(&queries)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run sextant");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(stderr.contains("gold in top 2: 2/2"), "{stderr}");
    assert!(
        !tmp.path().join(".sextant/sextant.db").exists(),
        "a temp data dir is used"
    );

    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    let ids: Vec<&str> = lines
        .iter()
        .map(|l| l["query_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["q1", "q2", "q3"]);
    for line in &lines {
        let results = line["results"].as_array().unwrap();
        assert!(!results.is_empty() && results.len() <= 2, "{line}");
        for r in results {
            let path = r["path"].as_str().unwrap();
            assert!(
                path.starts_with("src/"),
                "relative to the sub-corpus: {path}"
            );
            let (start, end) = (
                r["start_line"].as_u64().unwrap(),
                r["end_line"].as_u64().unwrap(),
            );
            assert!(1 <= start && start <= end, "{r}");
        }
    }
    assert_eq!(lines[0]["results"][0]["path"], "src/retry.ts");
    assert_eq!(lines[0]["results"][0]["start_line"], 3);
    assert_eq!(lines[2]["results"][0]["path"], "src/sleep.ts");
    assert_eq!(lines[2]["results"][0]["symbol"], "sleep");
}
