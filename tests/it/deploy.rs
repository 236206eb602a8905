//! The deployment files: the Helm chart rendered and checked against Kubernetes' schemas
//! (with the values it must refuse), and the compose files against the Compose
//! specification, by `deploy/check.sh`.

use crate::support::{Registry, Unavailable, skip};

#[test]
fn helm_chart_and_compose_file_validate() {
    let out = std::process::Command::new("bash")
        .arg("deploy/check.sh")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(3) => {
            return skip(
                "deployment file checks",
                Unavailable::missing(
                    "a tool deploy/check.sh fetches with",
                    "what its message names",
                    stderr.trim(),
                ),
            );
        }
        // The script checked that the registry does not answer its own client either.
        Some(2) => {
            return skip(
                "deployment file checks",
                Unavailable::Registry {
                    registry: if stderr.contains("(npm)") {
                        Registry::Npm
                    } else {
                        Registry::PyPi
                    },
                    detail: stderr.trim().to_string(),
                },
            );
        }
        _ => {}
    }
    assert!(
        out.status.success() && stdout.contains("check: ok"),
        "{stdout}\n{stderr}"
    );
    // The refusals ran: a chart that accepts everything would fail above.
    assert_eq!(stdout.matches("refused:").count(), 7, "{stdout}");
}
