//! QG007 (read before written) treats the variables NeMo's runtime sets before any flow runs
//! (`$user_message`, `$bot_message`, …) as host context: the library rail that masks sensitive
//! data reads and reassigns them, and must not be reported. A variable that is neither assigned
//! first nor the runtime's still is.

use ir::testkit::Builder;
use readers::rulebook::compile_text;
use std::path::Path;

fn qg007_subjects(file: &str, text: &str) -> Vec<String> {
    let mut p = Builder::new().build();
    p.rulebook = Some(compile_text(file, text).expect("compiles").rulebook);
    obligations::structural::structural(&p)
        .into_iter()
        .filter(|s| s.rule == obligations::catalog::QG007)
        .map(|s| s.subject)
        .collect()
}

#[test]
fn nemo_runtime_variables_are_host_context() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../fixtures/colang-examples/NVIDIA__NeMo-Guardrails__nemoguardrails__library__sensitive_data_detection__flows.v1.co",
    );
    let text = std::fs::read_to_string(&path).expect("the NeMo rail is in fixtures/");
    assert!(text.contains("$user_message = execute mask_sensitive_data"));
    let found = qg007_subjects("flows.v1.co", &text);
    assert!(
        !found
            .iter()
            .any(|s| s == "$user_message" || s == "$bot_message"),
        "{found:?}"
    );
}

#[test]
fn a_variable_assigned_later_is_still_read_before_written() {
    let text = "define flow check\n  if $verified\n    bot say ok\n  $verified = True\n";
    assert_eq!(
        qg007_subjects("rails.co", text),
        vec!["$verified".to_string()]
    );
}
