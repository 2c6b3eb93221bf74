//! The GitHub Actions workflow in `docs/ci.md` is exercised: every `run:` step not marked
//! `# ci-test: skip` runs, in order, on a copy of `examples/`, with the job's `env`, the
//! `GITHUB_ENV` file carried from step to step as the runner does, and `qls` on the PATH. The
//! upload steps (`uses:`) are the runner's and are not run.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The first ```yaml block of docs/ci.md, as JSON.
fn workflow() -> Value {
    let doc = std::fs::read_to_string(root().join("docs/ci.md")).expect("docs/ci.md exists");
    let start = doc.find("```yaml\nname: qls").expect("the workflow block") + "```yaml\n".len();
    let end = start + doc[start..].find("\n```").expect("the block ends");
    let node =
        readers::yaml::load_yaml("docs/ci.md", &doc[start..end]).expect("the workflow is YAML");
    readers::yaml::to_json(&node)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), t).unwrap();
        }
    }
}

#[test]
fn the_documented_workflow_runs_on_the_shop_and_passes_its_gate() {
    let wf = workflow();
    let job = &wf["jobs"]["verify"];
    let steps = job["steps"].as_array().expect("steps");
    let dir = crate::common::Scratch::new("ci");
    copy_dir(&root().join("examples"), &dir.join("examples"));
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_qls"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let github_env = dir.join("github.env");
    std::fs::write(&github_env, "").unwrap();
    let mut ran = 0;
    for step in steps {
        let Some(script) = step["run"].as_str() else {
            continue;
        };
        if script
            .lines()
            .next()
            .unwrap_or("")
            .starts_with("# ci-test: skip")
        {
            continue;
        }
        let mut cmd = Command::new("bash");
        cmd.arg("-eo").arg("pipefail").arg("-c").arg(script);
        cmd.current_dir(&dir)
            .env("PATH", &path)
            .env("GITHUB_ENV", &github_env);
        for env in [&job["env"], &step["env"]] {
            if let Some(m) = env.as_object() {
                for (k, v) in m {
                    cmd.env(k, v.as_str().unwrap_or_default());
                }
            }
        }
        for line in std::fs::read_to_string(&github_env).unwrap().lines() {
            if let Some((k, v)) = line.split_once('=') {
                cmd.env(k, v);
            }
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "step {:?} failed: {}{}",
            step["name"],
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        ran += 1;
    }
    assert_eq!(ran, 2, "the one verify step and the gate ran");
    let sarif: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("qls.sarif")).unwrap()).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    let findings: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("findings.json")).unwrap()).unwrap();
    assert_eq!(findings["gate"], "passed");
    assert!(
        dir.join("witnesses").is_dir(),
        "--keep wrote the witnesses folder"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
