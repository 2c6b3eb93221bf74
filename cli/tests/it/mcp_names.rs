//! Tool names as MCP allows them (`A–Z a–z 0–9 _ - .`) everywhere a tool is named. The whole
//! corpus, every tool renamed `ns.<name with - for _>` in every file of its case (catalogues,
//! Colang `execute`, rule sheets, order rules, `undo`, graphs, expected findings), proves to the
//! same findings and obligation verdicts, every witness replaying; SARIF names the dotted tools;
//! a check's `{from: <tool>.<field>}` reads a dotted tool by its longest declared name.

use prover::corpus::run_all;
use std::path::{Path, PathBuf};

use crate::mcp_common::{decide, decide_with, out, qls_in, sign_history, write};

/// The one case whose finding reads a tool's name inside another word: QG008 matches the bot
/// message `execute_refund` against the tool `refund`, and a rename of `refund` alone leaves
/// that message as it was. Its dotted form is checked below on its own.
const NAME_IN_A_WORD: &str = "qg008-fires";

/// Every tool name of a case's catalogues.
fn tool_names(case: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for f in std::fs::read_dir(case).unwrap() {
        let p = f.unwrap().path();
        let file = p.file_name().unwrap().to_string_lossy().to_string();
        if !file.contains("catalogue") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let cat = readers::catalogue::read_catalogue(&file, &text)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        names.extend(cat.tools.keys().cloned());
    }
    names
}

/// `text` with every whole-word occurrence of a name of `map` replaced (a word is a run of
/// letters, digits and `_` not joined to another by `.` or `-`).
fn rename(text: &str, map: &[(String, String)]) -> String {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if !word(chars[i]) {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && word(chars[i]) {
            i += 1;
        }
        let w: String = chars[start..i].iter().collect();
        let joined =
            (start > 0 && matches!(chars[start - 1], '.' | '-')) || chars.get(i) == Some(&'-');
        match map.iter().find(|(from, _)| *from == w) {
            Some((_, to)) if !joined => out.push_str(to),
            _ => out.push_str(&w),
        }
    }
    out
}

/// A copy of the corpus with every tool renamed, case by case.
fn renamed_corpus() -> PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let to = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp_names_corpus");
    let _ = std::fs::remove_dir_all(&to);
    for case in std::fs::read_dir(&from).unwrap() {
        let case = case.unwrap().path();
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        // The code checks' cases pin findings at a place in their tool code, and a dotted
        // name is no Python function name: renaming tools in code is not what this test asks.
        if !case.is_dir() || name == NAME_IN_A_WORD || name.starts_with("qc") {
            continue;
        }
        let map: Vec<(String, String)> = tool_names(&case)
            .into_iter()
            .map(|n| {
                let to = format!("ns.{}", n.replace('_', "-"));
                (n, to)
            })
            .collect();
        std::fs::create_dir_all(to.join(&name)).unwrap();
        copy_renamed(&case, &to.join(&name), &map);
    }
    to
}

fn copy_renamed(from: &Path, to: &Path, map: &[(String, String)]) {
    for f in std::fs::read_dir(from).unwrap() {
        let p = f.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
            copy_renamed(&p, &dest, map);
        } else if ir::code::Language::of_path(&p.to_string_lossy()).is_some() {
            // Tool code (the shop's module) is copied as it is: it stays valid code.
            std::fs::copy(&p, &dest).unwrap();
        } else {
            match std::fs::read_to_string(&p) {
                Ok(text) => std::fs::write(&dest, rename(&text, map)).unwrap(),
                Err(_) => {
                    std::fs::copy(&p, &dest).unwrap();
                }
            }
        }
    }
}

#[test]
fn the_renamed_corpus_proves_to_the_same_findings_and_replays() {
    let dir = renamed_corpus();
    let results = run_all(&dir, &engines::Z3);
    assert!(results.len() >= 40, "{} cases", results.len());
    let mismatches: Vec<String> = results
        .iter()
        .flat_map(|r| r.mismatches.iter().map(move |m| format!("{}: {m}", r.name)))
        .collect();
    assert!(
        mismatches.is_empty(),
        "renamed tools change the verdicts:\n{}",
        mismatches.join("\n")
    );
    // The rename reached the reports: the shop's refund is `ns.refund-card` throughout.
    let shop = results.iter().find(|r| r.name == "shop").unwrap();
    assert!(shop.text.contains("ns.refund-card"), "{}", shop.text);
    assert!(!shop.text.contains("refund_card"), "{}", shop.text);
    let replays: usize = results
        .iter()
        .map(|r| r.text.matches("  Replay: reproduced").count())
        .sum();
    assert!(replays > 0, "witnesses replayed");
    assert!(
        results
            .iter()
            .all(|r| !r.text.contains("Replay: not reproduced")),
        "every witness of a dotted tool replays"
    );

    // SARIF names a dotted tool as the subject of a result and in its witness's steps.
    let case = dir.join("qg012-fires");
    let o = qls_in(
        &case,
        &[
            "verify",
            "--graph",
            "graph.json",
            "--catalogue",
            "tools.catalogue.yaml",
            "--step-limit",
            "8",
            "--format",
            "sarif",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    let sarif: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    let qg012 = results
        .iter()
        .find(|r| r["ruleId"] == "QG012")
        .unwrap_or_else(|| panic!("{sarif}"));
    assert_eq!(qg012["properties"]["subject"], "ns.issue-refund", "{qg012}");
    let steps = qg012["codeFlows"][0]["threadFlows"][0]["locations"].to_string();
    assert!(steps.contains("(ns.read-mail)"), "{steps}");
}

#[test]
fn a_bot_line_naming_a_dotted_tool_is_qg008() {
    let case = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../corpus")
        .join(NAME_IN_A_WORD);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp_names_qg008");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let map = vec![
        ("refund".to_string(), "billing.refund-v2".to_string()),
        ("get_order".to_string(), "shop.get-order".to_string()),
    ];
    copy_renamed(&case, &dir, &map);
    let policy = std::fs::read_to_string(dir.join("policy.co")).unwrap();
    write(
        &dir,
        "policy.co",
        &policy.replace("bot execute_refund", "bot execute billing.refund-v2"),
    );
    let o = qls_in(&dir, &["verify", "agent.yaml"]);
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains("QG008 High on billing.refund-v2 (policy.co:3)"),
        "{}",
        out(&o)
    );
}

#[test]
fn a_check_reads_the_result_of_a_dotted_tool_by_its_longest_declared_name() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp_names_from");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // `admin` and `admin.tools.list` are both tools: `admin.tools.list.count` is the latter's
    // `count` (3), not the former's `tools.list.count` (100).
    write(&dir, "c.yaml", "tools:\n  admin: {effect: read}\n  admin.tools.list: {effect: read}\n  get-sum:\n    effect: write\n    irreversible: true\n    args: {type: object, properties: {a: {type: integer}}}\n");
    write(&dir, "rules.yaml", "rules:\n- action: get-sum\n  check: [{field: a, at_most: {from: admin.tools.list.count}}]\n");
    write(
        &dir,
        "plain.json",
        r#"{"session": "s", "entries": [
 {"tool": "admin", "ran": true, "result": {"tools": {"list": {"count": 100}}}},
 {"tool": "admin.tools.list", "ran": true, "result": {"count": 3}}]}"#,
    );
    sign_history(&dir);
    let decide = |a: u32| {
        let call =
            format!(r#"{{"tool": "get-sum", "args": {{"a": {a}}}, "origins": {{"a": "typed"}}}}"#);
        decide(&dir, "c.yaml", &call)
    };
    let d = decide(5);
    assert_eq!(d["decision"], "refuse", "{d}");
    assert_eq!(
        d["detail"],
        serde_json::json!({"field": "a", "op": "at_most", "value": 3}),
        "{d}"
    );
    let d = decide(3);
    assert_ne!(d["decision"], "refuse", "{d}");
}

#[test]
fn colang_rulebooks_govern_dotted_and_dashed_tools_in_the_tool_check() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp_names_colang");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    write(&dir, "c.yaml", "tools:\n  get-sum: {effect: read, args: {type: object, properties: {a: {type: integer}}}}\n  admin.tools.list: {effect: read, args: {type: object, properties: {}}}\n  github.CreateIssue: {effect: read, args: {type: object, properties: {}}}\n");
    write(&dir, "plain.json", r#"{"session": "s", "entries": []}"#);
    sign_history(&dir);
    let colang1 = "define flow sums\n  if $ok\n    execute get-sum\n  else\n    bot refuse\n\ndefine flow admin\n  if $ok\n    execute admin.tools.list\n\ndefine flow issues\n  if $ok\n    execute github.CreateIssue\n";
    let colang2 = "import core\n\nflow sums\n  if $ok\n    await get-sum(a=$a)\n  else\n    bot say \"no\"\n\nflow admin\n  if $ok\n    await admin.tools.list()\n\nflow issues\n  if $ok\n    await github.CreateIssue()\n";
    for (rulebook, text) in [("v1", colang1), ("v2", colang2)] {
        write(&dir, "rules.co", text);
        for (tool, flow) in [
            ("get-sum", "sums"),
            ("admin.tools.list", "admin"),
            ("github.CreateIssue", "issues"),
        ] {
            for ok in [false, true] {
                let call =
                    format!(r#"{{"tool": "{tool}", "args": {{}}, "context": {{"ok": {ok}}}}}"#);
                let d = decide_with(&dir, "c.yaml", "rules.co", &call);
                if ok {
                    assert_eq!(d["decision"], "allow", "{rulebook} {tool}: {d}");
                } else {
                    assert_eq!(
                        (d["decision"].as_str(), d["detail"]["flow"].as_str()),
                        (Some("refuse"), Some(flow)),
                        "{rulebook} {tool}: {d}"
                    );
                }
            }
        }
    }
}
