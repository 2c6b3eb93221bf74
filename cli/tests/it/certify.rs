//! Certificates (SPEC §5): `verify --certificates DIR` writes one per unreachable verdict with an
//! index that names its checks and hash; `qls certify` refuses what does not check, says how to
//! get cvc5 when it is missing, and reads a bad index with its line. The acceptance by the real
//! cvc5 is tested against the installed wheel (python/tests/test_certify.py), where the pinned
//! test requirements install it; here a stand-in `cvc5` module answers as told.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `qls args`, which must succeed: its output.
fn qls_ok(args: &[&str]) -> Output {
    let o = qls(args, &[]);
    let text = String::from_utf8_lossy(&o.stdout) + String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "qls {args:?}: {text}");
    o
}

/// Reads `DIR/certificates.json` as JSON.
fn index_of(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("certificates.json")).unwrap()).unwrap()
}

fn qls(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_qls"));
    c.args(args).current_dir(root());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// A stand-in for the `cvc5` package with the API the checker uses: every `(check-sat)` of the
/// file answers `answer`.
fn fake_cvc5(dir: &Path, answer: &str) {
    let module = format!(
        r#"
class InputLanguage:
    SMT_LIB_2_6 = 0
class TermManager: pass
class SymbolManager:
    def __init__(self, tm): pass
class Solver:
    def __init__(self, tm): pass
    def setOption(self, k, v): pass
    def getVersion(self): return "stand-in"
class _Cmd:
    def __init__(self, out): self.out = out
    def isNull(self): return self.out is None
    def invoke(self, s, sm): return self.out
class InputParser:
    def __init__(self, s, sm): self.cmds = []
    def setFileInput(self, lang, path):
        n = open(path).read().count("(check-sat)")
        self.cmds = ["{answer}\n"] * n
    def nextCommand(self):
        return _Cmd(self.cmds.pop(0) if self.cmds else None)
"#
    );
    std::fs::write(dir.join("cvc5.py"), module).unwrap();
}

fn certificates(tag: &str) -> (crate::common::Scratch, Value, Value) {
    certificates_at(tag, "1")
}

/// The shop's certificates at `turns` turns: the scratch folder, the report and the index.
fn certificates_at(tag: &str, turns: &str) -> (crate::common::Scratch, Value, Value) {
    let dir = crate::common::Scratch::new(&format!("certify-{tag}"));
    let out = dir.join("certs");
    let o = qls_ok(&[
        "verify",
        "examples/shop/agent.yaml",
        "--session-steps",
        turns,
        "--format",
        "json",
        "--certificates",
        out.to_str().unwrap(),
    ]);
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    (dir, report, index_of(&out))
}

#[test]
fn verify_writes_a_certificate_for_every_unreachable_verdict_with_its_checks_and_hash() {
    let (dir, report, index) = certificates("index");
    assert_eq!(index["format"], "qls-certificates/2");
    let unreachable: Vec<&str> = report["obligations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["verdict"].as_str().unwrap().starts_with("unreachable"))
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    let entries = index["certificates"].as_array().unwrap();
    let named: Vec<&str> = entries
        .iter()
        .map(|e| e["obligation"].as_str().unwrap())
        .collect();
    assert!(!unreachable.is_empty());
    assert_eq!(named, unreachable);
    for e in entries {
        let file = dir.join("certs").join(e["file"].as_str().unwrap());
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with("; qls certificate"), "{}", file.display());
        assert_eq!(
            prover::certificates::sha256_hex(text.as_bytes()),
            e["sha256"].as_str().unwrap()
        );
        let checks = e["checks"].as_array().unwrap().len();
        assert_eq!(text.matches("(check-sat)").count(), checks);
        // The shop's first turn: the unrolling to its depth, one question per depth.
        assert_eq!(e["kind"], "unrolling");
        assert_eq!(checks as u64, e["depth"].as_u64().unwrap());
        assert!(!e["decided_by"].as_array().unwrap().is_empty());
    }
}

/// Over two turns Z3 proves the shop's unreachable obligations by k-induction, and their
/// certificates are its invariant (a bounded verdict, proved for every depth), not the unrolling
/// to the depth that the first turn's certificates are.
#[test]
fn a_bounded_verdict_z3_proved_by_induction_over_several_turns_is_certified_by_its_invariant() {
    let (_dir, report, index) = certificates_at("turns", "2");
    let verdicts: Vec<&str> = report["obligations"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["verdict"].as_str())
        .filter(|v| v.starts_with("unreachable"))
        .collect();
    assert!(!verdicts.is_empty());
    assert!(verdicts.iter().all(|v| *v == "unreachable"), "{verdicts:?}");
    let entries = index["certificates"].as_array().unwrap();
    assert_eq!(entries.len(), verdicts.len());
    for e in entries {
        assert_eq!(e["kind"], "induction", "{e}");
        // Initiation, consecution, the induction step, and one base case per k.
        let checks = e["checks"].as_array().unwrap().len() as u64;
        assert_eq!(checks, 3 + e["depth"].as_u64().unwrap(), "{e}");
        assert!(e["decided_by"].as_array().unwrap().contains(&"bmc".into()));
    }
}

#[test]
fn certify_refuses_a_certificate_whose_check_is_satisfiable_and_accepts_unsat_answers() {
    let (dir, _, _) = certificates("answers");
    let certs = dir.join("certs");
    for (answer, code, word) in [("sat", 1, "REJECTED"), ("unsat", 0, "accepted")] {
        let module = dir.join(format!("fake-{answer}"));
        std::fs::create_dir_all(&module).unwrap();
        fake_cvc5(&module, answer);
        let o = qls(
            &["certify", certs.to_str().unwrap(), "--python", "python3"],
            &[("PYTHONPATH", &module)],
        );
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert_eq!(
            o.status.code(),
            Some(code),
            "{stdout}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(stdout.lines().next().unwrap().starts_with(word), "{stdout}");
        if answer == "sat" {
            assert!(
                stdout.contains("check 1 (no bad step at depth 1) answered sat"),
                "{stdout}"
            );
        }
    }
}

#[test]
fn certify_without_cvc5_says_how_to_install_it() {
    let (dir, _, _) = certificates("missing");
    let module = dir.join("no-cvc5");
    std::fs::create_dir_all(&module).unwrap();
    std::fs::write(module.join("cvc5.py"), "raise ImportError('not here')\n").unwrap();
    let certs = dir.join("certs");
    let o = qls(
        &["certify", certs.to_str().unwrap(), "--python", "python3"],
        &[("PYTHONPATH", &module)],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("pip install cvc5"), "{stderr}");
}

#[test]
fn certify_reads_a_bad_index_with_its_line() {
    let dir = crate::common::Scratch::new("certify-bad-index");
    std::fs::write(
        dir.join("certificates.json"),
        "{\n  \"format\": \"qls-certificates/1\",\n  \"system\": 3\n}\n",
    )
    .unwrap();
    let o = qls(&["certify", dir.to_str().unwrap()], &[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("certificates.json:3:"), "{stderr}");
}

/// An invariant's initiation and consecution are written once, in a shared file the index lists
/// and each certificate resting on it names (the corpus's batch case: the symbolic fixpoint, a
/// bounded verdict on a system with batches); `qls certify` checks it, and a changed shared
/// file refuses every certificate that names it, though their own files are untouched.
#[test]
fn an_invariants_shared_file_is_checked_and_a_changed_one_refuses_its_certificates() {
    let dir = crate::common::Scratch::new("certify-shared");
    let case = "batch-untrusted-read-then-persistent-write-fires";
    let cases = dir.join("cases");
    std::fs::create_dir_all(cases.join(case)).unwrap();
    for f in std::fs::read_dir(root().join("corpus").join(case)).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, cases.join(case).join(f.file_name().unwrap())).unwrap();
    }
    let out = dir.join("certs");
    qls_ok(&[
        "corpus",
        cases.to_str().unwrap(),
        "--certificates",
        out.to_str().unwrap(),
    ]);
    let certs = out.join(case);
    let index = index_of(&certs);
    assert_eq!(index["format"], "qls-certificates/2");
    let shared = index["invariants"].as_array().expect("a shared file");
    let named: Vec<&Value> = (index["certificates"].as_array().unwrap().iter())
        .filter(|e| !e["invariant"].is_null())
        .collect();
    assert!(!named.is_empty(), "{index}");
    for e in &named {
        assert_eq!(e["kind"], "fixpoint", "{e}");
        // Its own file: the safety check alone.
        assert_eq!(e["checks"].as_array().unwrap().len(), 1, "{e}");
        assert!(
            shared.iter().any(|s| s["file"] == e["invariant"]),
            "{index}"
        );
    }
    for s in shared {
        let text = std::fs::read_to_string(certs.join(s["file"].as_str().unwrap())).unwrap();
        assert_eq!(
            text.matches("(check-sat)").count(),
            s["checks"].as_array().unwrap().len()
        );
        assert!(text.contains("; check: initiation") && text.contains("; check: consecution"));
    }
    let module = dir.join("fake-unsat");
    std::fs::create_dir_all(&module).unwrap();
    fake_cvc5(&module, "unsat");
    let run = || {
        let o = qls(
            &["certify", certs.to_str().unwrap(), "--python", "python3"],
            &[("PYTHONPATH", &module)],
        );
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    };
    let (code, stdout) = run();
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.contains(".smt2 with invariant-"), "{stdout}");
    let first = certs.join(shared[0]["file"].as_str().unwrap());
    let mut text = std::fs::read_to_string(&first).unwrap();
    text.push_str("; changed\n");
    std::fs::write(&first, text).unwrap();
    let (code, stdout) = run();
    assert_eq!(code, Some(1), "{stdout}");
    for e in named.iter().filter(|e| e["invariant"] == shared[0]["file"]) {
        let line = (stdout.lines())
            .find(|l| l.contains(e["obligation"].as_str().unwrap()))
            .expect("a line per certificate");
        assert!(
            line.starts_with("REJECTED") && line.contains("its shared file"),
            "{line}"
        );
    }
}

/// For sessions of any length, the shop's verdicts are certified by the invariant Z3's proof
/// kept (`from_proof`), Spacer's with a shared file or the induction's, and `qls certify` says so.
#[test]
fn a_proof_for_any_length_is_certified_by_the_invariant_it_kept() {
    let (dir, _, index) = certificates_at("kept", "any");
    let entries = index["certificates"].as_array().unwrap();
    assert!(!entries.is_empty());
    for e in entries {
        assert_eq!(e["from_proof"], true, "{e}");
        match e["kind"].as_str() {
            Some("spacer") => assert!(e["invariant"].is_string(), "{e}"),
            Some("induction") => assert!(e["invariant"].is_null(), "{e}"),
            _ => panic!("an invariant: {e}"),
        }
    }
    let module = dir.join("fake-unsat");
    std::fs::create_dir_all(&module).unwrap();
    fake_cvc5(&module, "unsat");
    let certs = dir.join("certs");
    let o = qls(
        &["certify", certs.to_str().unwrap(), "--python", "python3"],
        &[("PYTHONPATH", &module)],
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}");
    assert_eq!(
        stdout.matches("(the proof's own)").count(),
        entries.len(),
        "{stdout}"
    );
}
