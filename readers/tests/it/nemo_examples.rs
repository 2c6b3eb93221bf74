//! NeMo Guardrails as its users write it: every `.co` file of `fixtures/colang-examples/` (the
//! top-level files and the `nemo/` sweep) held to its result, the library rails and tutorial
//! files the issue names, NeMo configuration folders, and tool names with `-` and `.`.

use ir::rulebook::{CmpOp, Language, Operand};
use readers::rulebook::{colang, compile_text, read_compiled_dir};
use std::path::{Path, PathBuf};

fn examples() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/colang-examples"
    ))
}

/// Every `.co` file directly in `dir`, sorted, with its text.
fn co_files(dir: &Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "co"))
        .map(|p| {
            let name = p
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string();
            (name, std::fs::read_to_string(&p).unwrap_or_default())
        })
        .collect();
    out.sort();
    out
}

/// One line per file: what it compiles to, in counts, or the line it is refused at.
fn summary(prefix: &str, name: &str, text: &str) -> String {
    match compile_text(name, text) {
        Ok(c) => {
            let rb = c.rulebook;
            let paths: usize = rb.gates.values().map(|g| g.paths.len()).sum();
            let gates: Vec<&str> = rb.gates.keys().map(String::as_str).collect();
            format!(
                "{prefix}{name} compiled {:?} flows={} executes={} paths={} bots={} notes={} gates=[{}]",
                rb.language,
                rb.flows.len(),
                rb.executes.len(),
                paths,
                rb.bot_uses.len(),
                rb.notes.len(),
                gates.join("|")
            )
        }
        Err(e) => format!(
            "{prefix}{name} refused line={} col={}",
            e.line,
            e.col.unwrap_or(0)
        ),
    }
}

const EXPECTED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/it/nemo_examples.expected"
);

/// Each file's result is written down in `nemo_examples.expected`; a change in what any file
/// compiles to (or where it is refused) shows here. `QLS_UPDATE_EXPECTED=1` rewrites the file.
#[test]
fn every_example_is_held_to_its_result() {
    let mut lines = Vec::new();
    for (sub, prefix) in [("", ""), ("nemo", "nemo/")] {
        for (name, text) in co_files(&examples().join(sub)) {
            lines.push(summary(prefix, &name, &text));
        }
    }
    let got = lines.join("\n") + "\n";
    if std::env::var_os("QLS_UPDATE_EXPECTED").is_some() {
        std::fs::write(EXPECTED, &got).unwrap();
    }
    let want = std::fs::read_to_string(EXPECTED).unwrap_or_default();
    for (g, w) in got.lines().zip(want.lines()) {
        assert_eq!(
            g, w,
            "a file's result changed (QLS_UPDATE_EXPECTED=1 to accept)"
        );
    }
    assert_eq!(
        got.lines().count(),
        want.lines().count(),
        "the set of files changed"
    );
    let total = lines.iter().filter(|l| l.starts_with("nemo/")).count();
    let ok = lines
        .iter()
        .filter(|l| l.starts_with("nemo/") && l.contains(" compiled "))
        .count();
    assert!(total >= 143, "{total} files in nemo/");
    assert!(ok * 100 >= total * 95, "{ok} of {total} compile: under 95%");
}

fn nemo(name: &str) -> ir::rulebook::Rulebook {
    let p = examples().join("nemo").join(name);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{name}: {e}"));
    compile_text(name, &text)
        .unwrap_or_else(|e| panic!("{e}"))
        .rulebook
}

#[test]
fn library_rails_with_multi_word_actions_compile_and_govern_them() {
    for (file, action) in [
        (
            "nemoguardrails__library__activefence__flows.v1.co",
            "call activefence api",
        ),
        (
            "nemoguardrails__library__cleanlab__flows.v1.co",
            "call cleanlab api",
        ),
        (
            "nemoguardrails__library__gcp_moderate_text__flows.co",
            "call gcpnlp api",
        ),
        (
            "nemoguardrails__library__gotitai__flows.v1.co",
            "call gotitai truthchecker api",
        ),
    ] {
        let rb = nemo(file);
        assert_eq!(rb.language, Language::Colang1, "{file}");
        let g = rb
            .gate(action)
            .unwrap_or_else(|| panic!("{file}: {:?}", rb.gates.keys()));
        assert!(!g.paths.is_empty(), "{file}");
        assert_eq!(rb.gates.len(), 1, "{file}: {:?}", rb.gates.keys());
    }
}

#[test]
fn the_getting_started_disallowed_topics_rail_compiles() {
    let rb = nemo("docs__getting_started__6_topical_rails__config__rails__disallowed_topics.co");
    assert!(rb
        .bot_uses
        .iter()
        .any(|b| b.message == "refuse to respond about self-harm"));
    // `define flow` with no name: NeMo names it by a hash of its body, this reader by its line.
    assert_eq!(rb.flows.len(), 7, "{:?}", rb.flows);
}

#[test]
fn the_abc_bot_config_folder_is_a_rulebook() {
    let dir = examples().join("nemo-configs/abc");
    let c = read_compiled_dir(&dir, "abc").unwrap_or_else(|e| panic!("{e}"));
    let rb = c.rulebook;
    let files: Vec<&str> = rb.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(files, vec!["abc/config.yml", "abc/rails/disallowed.co"]);
    let cfg = rb.nemo.as_ref().expect("the NeMo configuration");
    assert_eq!(cfg.colang_version, "1.0");
    assert_eq!(cfg.rails["input"], vec!["self check input"]);
    assert_eq!(cfg.rails["output"], vec!["self check output"]);
    assert_eq!(
        cfg.library_flows,
        vec!["self check input", "self check output"]
    );
    assert_eq!(rb.flows.len(), 21, "{:?}", rb.flows);
    assert!(rb
        .bot_messages
        .contains_key("refuse to respond about self-harm"));
    assert!(rb
        .bot_uses
        .iter()
        .all(|b| b.at.file == "abc/rails/disallowed.co"));
    assert!(rb.gates.is_empty());
    // The IR names the folder and every file, so it is reproducible.
    let json = serde_json::to_string(&rb).unwrap();
    let back: ir::rulebook::Rulebook = serde_json::from_str(&json).unwrap();
    assert_eq!(back, rb);
}

#[test]
fn a_config_folder_names_the_refusals_of_each_file() {
    let tmp = tempfile::Builder::new()
        .prefix("qls-nemo-")
        .tempdir()
        .unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("rails")).unwrap();
    std::fs::write(
        dir.join("config.yml"),
        "colang_version: \"2.x\"\nrails:\n  input:\n    flows:\n      - guard\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("rails/a.co"),
        "flow guard\n  $ok = await CheckAction()\n  if $ok\n    await refund_card(amount=$n)\n  await helper\n",
    )
    .unwrap();
    std::fs::write(dir.join("z.co"), "flow helper\n  bot say \"hi\"\n").unwrap();
    let rb = read_compiled_dir(dir, "cfg").unwrap().rulebook;
    assert_eq!(rb.language, Language::Colang2);
    assert!(rb.gate("refund_card").is_some());
    // `helper` is a flow of another file of the folder, not an action.
    let gates: Vec<&str> = rb.gates.keys().map(String::as_str).collect();
    assert_eq!(gates, vec!["CheckAction", "refund_card"]);
    let files: Vec<&str> = rb.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(files, vec!["cfg/config.yml", "cfg/rails/a.co", "cfg/z.co"]);
    assert!(rb.nemo.as_ref().unwrap().library_flows.is_empty());
    std::fs::write(
        dir.join("rails/b.co"),
        "flow other\n  for $x in $y\n    abort\n",
    )
    .unwrap();
    let e = read_compiled_dir(dir, "cfg").unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("cfg/rails/b.co", 2), "{e}");
}

#[test]
fn tools_with_hyphens_and_dots_are_named_in_both_dialects() {
    let v1 = "define flow f\n  if $ok\n    execute get-sum(a=$x)\n  execute admin.tools.list\n  $r = execute call activefence api\n";
    let v2 = "flow f\n  if $ok\n    await get-sum(a=$x)\n  await admin.tools.list()\n  execute admin.tools.list\n  match UtteranceUserAction.Finished()\n";
    for (t, lang) in [(v1, Language::Colang1), (v2, Language::Colang2)] {
        let rb = compile_text("p.co", t)
            .unwrap_or_else(|e| panic!("{e}"))
            .rulebook;
        assert_eq!(rb.language, lang);
        let mut names: Vec<&str> = rb.gates.keys().map(String::as_str).collect();
        names.sort();
        let mut want = vec!["admin.tools.list", "get-sum"];
        if lang == Language::Colang1 {
            want.insert(1, "call activefence api");
        }
        assert_eq!(names, want, "{lang:?}");
        let g = rb.gate("get-sum").unwrap();
        assert_eq!(g.paths.len(), 1);
        assert_eq!(
            g.paths[0].literals[0].operand,
            Operand::Context("ok".into())
        );
        assert!(rb.gate("admin.tools.list").unwrap().paths[0]
            .literals
            .is_empty());
    }
}

#[test]
fn every_refusal_in_a_file_is_reported() {
    let t = "define flow f\n  user hi\n  frobnicate\n  if $a ==\n    execute w\n  goto x\n";
    let e = colang::compile_colang1("p.co", t).unwrap_err();
    assert_eq!(e.line, 3);
    assert!(
        e.message
            .contains("`frobnicate` is not a Colang 1.0 statement"),
        "{e}"
    );
    assert!(e.message.contains("2 more refusals"), "{e}");
    assert!(e.message.contains("line 4:"), "{e}");
    assert!(
        e.message.contains("line 6:") && e.message.contains("goto"),
        "{e}"
    );
}

#[test]
fn a_condition_the_ir_cannot_state_opens_both_branches() {
    let t = "define flow f\n  if \"x\" in $user_message\n    bot refuse\n    stop\n  execute w\n";
    let rb = colang::compile_colang1("p.co", t).unwrap();
    let g = rb.gate("w").unwrap();
    assert_eq!(g.paths.len(), 1);
    assert!(
        g.paths[0].literals.is_empty(),
        "never refused on the unknown test"
    );
    assert!(rb
        .notes
        .iter()
        .any(|n| n.at.line == 2 && n.construct.contains("cannot state")));
}

#[test]
fn a_while_loop_is_followed_until_its_paths_settle() {
    // The call is reachable only on the second round: one pass over the body would find no path
    // and make the gate refuse every call (a false "never").
    let t = "flow f\n  $allowed = False\n  while True\n    if $allowed\n      await Refund(amount=$n)\n    $allowed = True\n    if $n > 3\n      break\n  await Audit()\n";
    let rb = colang::compile_colang2("p.co", t).unwrap();
    let g = rb.gate("Refund").unwrap();
    assert_eq!(g.paths.len(), 1, "{:?}", g.paths);
    // On every round after the first, `$n > 3` would have left the loop: the call's amount is
    // at most 3, exactly.
    assert_eq!(g.paths[0].literals.len(), 1, "{:?}", g.paths);
    assert_eq!(
        g.paths[0].literals[0].operand,
        Operand::Arg("amount".into())
    );
    assert_eq!(g.paths[0].literals[0].op, CmpOp::Le);
    assert_eq!(rb.executes.len(), 2, "recorded once, not per round");
    let a = rb.gate("Audit").unwrap();
    assert_eq!(a.paths.len(), 1);
    assert_eq!(
        a.paths[0].literals[0].op,
        CmpOp::Gt,
        "only `break` leaves `while True`"
    );
}

#[test]
fn a_loop_that_computes_its_own_exit_puts_no_condition_on_what_follows() {
    // Issue 55's example: the loop's exit (`$amount > 0` failing) is what the loop computed, so
    // `send_money` after it runs whatever the input: one path, no condition (QG004 sees it).
    let t = "flow pay rent\n  match UtteranceUserAction.Finished(final_transcript=\"pay the rent\") as $ref\n  $amount = 1200\n  while $amount > 0\n    $amount = $amount - 1200\n  await send_money\n";
    let rb = colang::compile_colang2("p.co", t).unwrap_or_else(|e| panic!("{e}"));
    let g = rb.gate("send_money").unwrap();
    assert_eq!(g.paths.len(), 1, "{:?}", g.paths);
    assert!(g.paths[0].literals.is_empty(), "{:?}", g.paths);
    // Without the loop, the same: the loop changed nothing the gate states.
    let flat = "flow pay rent\n  match UtteranceUserAction.Finished(final_transcript=\"pay the rent\") as $ref\n  $amount = 1200\n  await send_money\n";
    let f = colang::compile_colang2("p.co", flat).unwrap();
    let lits =
        |p: &[ir::rulebook::GatePath]| p.iter().map(|p| p.literals.clone()).collect::<Vec<_>>();
    assert_eq!(lits(&f.gate("send_money").unwrap().paths), lits(&g.paths));
    // A path whose known value keeps the condition true never leaves: a loop that never
    // changes `$amount` leaves only from the paths where it is unknown.
    let stuck = "flow f\n  $amount = 1200\n  while $amount > 0\n    bot say \"waiting\"\n  await send_money\n";
    let s = colang::compile_colang2("p.co", stuck).unwrap();
    assert!(
        s.gate("send_money").is_none_or(|g| g.paths.is_empty()),
        "{:?}",
        s.gate("send_money")
    );
    // A condition on what the body does not assign still holds after the loop (the flow
    // goes on only once the context says so), as an `if` would.
    let input = "flow f\n  while $balance < 100\n    bot say \"waiting\"\n  await send_money\n";
    let i = colang::compile_colang2("p.co", input).unwrap();
    let p = &i.gate("send_money").unwrap().paths;
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].literals.len(), 1, "{p:?}");
    assert_eq!(p[0].literals[0].op, CmpOp::Ge);
}

#[test]
fn nemos_own_counting_loop_puts_no_condition_on_what_follows() {
    // NVIDIA/NeMo-Guardrails' `tests/test_configs/mvp_v2_x_d/config.co` (fixtures/colang-
    // examples/nemo/, provenance in fixtures/README.md): `flow count` sets `$count = 1`, then
    // `while $count <= 5` says it and adds one. An action put after that loop runs once the
    // counting is done, whatever the input: its one path carries no `$count > 5`.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/colang-examples/nemo/tests__test_configs__mvp_v2_x_d__config.co"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let body = "  while $count <= 5\n    bot say \"{$count}\"\n    $count = $count + 1\n";
    assert!(text.contains(body), "the file as fetched");
    let real = colang::compile_colang2("config.co", &text).unwrap_or_else(|e| panic!("{e}"));
    assert!(real.gate("Announce").is_none());
    let edited = text.replacen(body, &format!("{body}  await Announce(n=$count)\n"), 1);
    let rb = colang::compile_colang2("config.co", &edited).unwrap_or_else(|e| panic!("{e}"));
    let g = rb.gate("Announce").unwrap();
    assert_eq!(g.paths.len(), 1, "{:?}", g.paths);
    assert!(g.paths[0].literals.is_empty(), "{:?}", g.paths);
}

#[test]
fn the_event_language_is_kept_as_steps() {
    let t = "flow main\n  match UtteranceUserAction.Finished(final_transcript=\"Hi\") as $ref\n  start UtteranceBotAction(script=\"x\") as $b\n    and GestureBotAction(gesture=\"wave\")\n  send $b.Stop()\n  $v = ...\"a number\"\n  ...\n  when user said \"hi\"\n    await Lookup(q=$ref)\n  or when user said \"bye\"\n    abort\n";
    let rb = colang::compile_colang2("p.co", t).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = rb.gates.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        vec!["UtteranceBotAction", "GestureBotAction", "Lookup"]
    );
    let constructs: Vec<&str> = rb.notes.iter().map(|n| n.construct.as_str()).collect();
    assert!(constructs.contains(&"`match`"), "{constructs:?}");
    assert!(constructs.contains(&"`send`"), "{constructs:?}");
    assert!(
        constructs.iter().any(|c| c.contains("`...`")),
        "{constructs:?}"
    );
    assert!(
        constructs.iter().any(|c| c.contains("`when`")),
        "{constructs:?}"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]
    /// Lines made of Colang's own words, operators and indentation never crash either reader:
    /// each compiles or is refused with a line inside the text.
    #[test]
    fn odd_colang_never_panics(parts in proptest::collection::vec(proptest::sample::select(vec![
        "define ", "flow ", "user ", "bot ", "execute ", "await ", "match ", "send ", "start ",
        "while ", "if ", "else", "elif ", "when ", "or ", "and ", "not ", "break", "continue",
        "$x", "$r.Stop", " = ", "(", ")", "[", "{", "}", ":", ".", "-", ",", "\"s\"", "\"\"\"",
        "...", "'", "3", " in ", " as ", "#", "\\", "\n", "\n  ", "\n    ", "\n\t", "get-sum",
        "admin.tools.list", "call api", "True",
    ]), 0..40)) {
        let text: String = parts.concat();
        let lines = text.lines().count() as u32 + 1;
        for r in [colang::compile_colang1("p.co", &text), colang::compile_colang2("p.co", &text)] {
            if let Err(e) = r {
                proptest::prop_assert!(e.line <= lines, "{e}");
                proptest::prop_assert_eq!(e.code.as_deref(), Some("rulebook_unsupported"));
            }
        }
    }
}

#[test]
fn a_folder_of_rails_without_config_yml_is_read_with_nemo_defaults() {
    let tmp = tempfile::Builder::new()
        .prefix("qls-nemo-bare-")
        .tempdir()
        .unwrap();
    let dir = tmp.path();
    let e = read_compiled_dir(dir, "bare").unwrap_err();
    assert!(e.message.contains("config.yml"), "{e}");
    std::fs::write(
        dir.join("rails.co"),
        "define flow refunds\n  if $order_paid\n    execute refund_card\n",
    )
    .unwrap();
    let rb = read_compiled_dir(dir, "bare").unwrap().rulebook;
    assert_eq!(
        rb.language,
        Language::Colang1,
        "NeMo's default colang_version"
    );
    assert_eq!(rb.nemo.as_ref().unwrap().colang_version, "1.0");
    assert_eq!(rb.files.len(), 1);
    assert!(rb.gate("refund_card").is_some());
}
