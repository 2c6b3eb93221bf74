//! `qls repair`'s changes that ask a person (issue 51 item 5): an argument taken out of a
//! write's `model_may_write` closes an attack goal whose call the model writes, and a person's
//! approval put in front of a tools node of a `qls-graph/1` file closes a destination the model
//! writes at a read (where *confirm a read* would make the read a write with no compensation,
//! a new QG105); in an agent.yaml, which has no human node, *confirm a read* is taken with the
//! QG105 it adds named. Each repair is applied with `git apply`, verified (gate passed, nothing
//! new but what the repair names) and keeps every tool executable or the user's task running
//! alone.

use crate::repair::{repair_and_apply, scratch, verify};
use crate::repair_keep::{executable, qls, sarif_fixed};
use prover::job::Inputs;

const PAY_AGENT: &str = "agents:
  desk:
    model: \"anthropic:claude-sonnet-5-5\"
    tools: [read_inbox, send_money]
    budget: 3
tools:
  - catalogue: ./tools.catalogue.yaml
settings: {write_policy: declared, step_limit: 6}
tasks:
  attacker_payee:
    never: true
    after: untrusted
    calls:
      - {tool: send_money, args: {recipient: model}}
  pay_typed:
    calls:
      - {tool: send_money, args: {recipient: typed, amount: typed, subject: model}}
";

const PAY_CATALOGUE: &str = "tools:
  read_inbox:
    effect: read
    args: {type: object, properties: {}, required: [], additionalProperties: false}
    returns: untrusted
  send_money:
    effect: write
    args: {type: object, properties: {recipient: {type: string}, amount: {type: number}, subject: {type: string}}, required: [recipient, amount], additionalProperties: false}
    irreversible: true
    trust: external
    model_may_write: [subject, recipient]
";

#[test]
fn an_attack_goal_the_model_writes_is_closed_by_taking_its_argument_out_of_model_may_write() {
    let work = scratch("model-may-write");
    std::fs::write(work.join("agent.yaml"), PAY_AGENT).unwrap();
    std::fs::write(work.join("tools.catalogue.yaml"), PAY_CATALOGUE).unwrap();
    let (passed, before) = verify(Inputs::Agent(work.join("agent.yaml")));
    assert!(!passed);
    assert!(before.contains(&("QG025".into(), "attacker_payee".into())));
    let (code, out) = qls(&["repair", "agent.yaml"], &work);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(
            "Kept: every task possible before stays so: task `pay_typed` (without a person)"
        ),
        "{out}"
    );
    assert!(
        out.contains("  - take `recipient` out of `send_money`'s `model_may_write`: a person confirms the calls where the model wrote it (`argument_origin`) (tools.catalogue.yaml:11) [cost 1]"),
        "{out}"
    );
    let diff = repair_and_apply(&work, &["agent.yaml"]);
    assert!(diff.contains("+    model_may_write: [subject]\n"), "{diff}");
    let (passed, after) = verify(Inputs::Agent(work.join("agent.yaml")));
    assert!(passed, "{after:?}");
    assert!(after.is_subset(&before), "nothing new: {after:?}");
    let (code, out) = qls(&["verify", "agent.yaml"], &work);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("Tasks: 1 of 1 possible without a person; 1 attack goal blocked."),
        "{out}"
    );
}

const GRAPH: &str = r#"{
 "format": "qls-graph/1",
 "entry": "desk_router",
 "agents": {"desk": {"privilege": "low", "tools": ["get_webpage", "send_message"], "budget": 3}},
 "nodes": [
  {"id": "desk_router", "kind": "router", "agent": "desk"},
  {"id": "desk_model", "kind": "model", "agent": "desk"},
  {"id": "desk_tools", "kind": "tools", "agent": "desk", "guarded": true, "tools": ["get_webpage", "send_message"]},
  {"id": "end", "kind": "end"}
 ],
 "edges": [
  {"from": "desk_router", "to": "desk_model", "kind": "route"},
  {"from": "desk_router", "to": "end", "kind": "route"},
  {"from": "desk_model", "to": "desk_tools", "kind": "call"},
  {"from": "desk_tools", "to": "desk_model", "kind": "return"},
  {"from": "desk_model", "to": "end", "kind": "reply"}
 ]
}
"#;

const WEB_CATALOGUE: &str = "tools:
  get_webpage:
    effect: read
    args: {type: object, properties: {url: {type: string}}, required: [url], additionalProperties: false}
    returns: untrusted
    sends_out: true
    arg_kinds: {url: url}
  send_message:
    effect: write
    args: {type: object, properties: {body: {type: string}}, required: [body], additionalProperties: false}
    irreversible: true
";

#[test]
fn a_person_s_approval_in_front_of_a_tools_node_closes_a_destination_the_model_writes() {
    let work = scratch("approve-node");
    let case = work.join("case");
    std::fs::create_dir_all(&case).unwrap();
    std::fs::write(case.join("graph.json"), GRAPH).unwrap();
    std::fs::write(case.join("tools.catalogue.yaml"), WEB_CATALOGUE).unwrap();
    std::fs::write(
        case.join("case.json"),
        r#"{"graph": "graph.json", "catalogue": "tools.catalogue.yaml", "rulebook": null, "settings": null, "session_steps": 1, "step_limit": 6}"#,
    )
    .unwrap();
    let (passed, before) = verify(Inputs::Case(case.clone()));
    assert!(!passed);
    assert!(before.contains(&("QG018".into(), "get_webpage".into())));
    let tools = executable(Inputs::Case(case.clone()));
    let (code, out) = qls(&["repair", "--case", "case"], &work);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("Fix (proved): put a person's approval in front of `desk_tools`: a human node `desk_tools_approve`"),
        "{out}"
    );
    assert!(out.contains("[cost 2]"), "{out}");
    let diff = repair_and_apply(&work, &["--case", "case"]);
    assert!(
        diff.contains(
            "+  {\"id\": \"desk_tools_approve\", \"kind\": \"human\", \"agent\": \"desk\"}"
        ),
        "{diff}"
    );
    assert!(
        diff.contains(
            "+  {\"from\": \"desk_model\", \"to\": \"desk_tools_approve\", \"kind\": \"call\"},"
        ),
        "{diff}"
    );
    let (passed, after) = verify(Inputs::Case(case.clone()));
    assert!(passed, "{after:?}");
    assert!(after.is_subset(&before), "nothing new: {after:?}");
    assert_eq!(
        executable(Inputs::Case(case)),
        tools,
        "every tool stays executable"
    );
}

/// The agent.yaml form of the two-tool web agent above: an agent.yaml has no human node, so a
/// person is asked at the read by *confirm a read*, which makes `get_webpage` a write with no
/// compensation on a path with `send_message`: a new QG105 (Review, not gate-failing).
const WEB_AGENT: &str = "agents:
  desk:
    model: \"anthropic:claude-sonnet-5-5\"
    tools: [get_webpage, send_message]
    budget: 3
tools:
  - catalogue: ./tools.catalogue.yaml
settings: {step_limit: 6}
";

/// Caught on agentdojo-banking, -slack and taubench-airline (issue 51): the search refused
/// *confirm a read* because it adds a QG105 that does not fail the gate, and spent its budget.
/// A new finding that does not fail the gate is allowed, counted 1 in the search and named: in
/// the text, on the diff's `# [adds finding]` line and in SARIF.
#[test]
fn confirming_a_read_that_adds_a_qg105_is_still_the_repair_and_the_added_finding_is_named() {
    let work = scratch("confirm-read-adds-qg105");
    let case = work.join("case");
    std::fs::create_dir_all(&case).unwrap();
    std::fs::write(case.join("agent.yaml"), WEB_AGENT).unwrap();
    std::fs::write(case.join("tools.catalogue.yaml"), WEB_CATALOGUE).unwrap();
    let agent = case.join("agent.yaml");
    let (passed, before) = verify(Inputs::Agent(agent.clone()));
    assert!(!passed);
    assert!(before.contains(&("QG018".into(), "get_webpage".into())));
    assert!(!before.contains(&("QG105".into(), "get_webpage".into())));
    let tools = executable(Inputs::Agent(agent.clone()));
    let (code, out) = qls(&["repair", "case/agent.yaml"], &work);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("Fix (proved): declare `get_webpage` a write a person confirms"),
        "{out}"
    );
    assert!(
        out.contains("Repair: 1 change, cost 3; counted 4 with the 1 finding it adds (1 each); the cheapest so counted"),
        "{out}"
    );
    assert!(
        out.contains("It adds 1 finding that does not fail the gate (allowed; review it):\n  - [adds finding] QG105 get_webpage (Unrecoverable write, Security hotspot, does not fail the gate): the write 'get_webpage' has no compensation"),
        "{out}"
    );
    // Named at the inputs' own file, not the search's working copy.
    assert!(out.contains("(case/agent.yaml:4)"), "{out}");
    let (code, sarif) = qls(&["repair", "case/agent.yaml", "--format", "sarif"], &work);
    assert_eq!(code, Some(0), "{sarif}");
    let fixed = sarif_fixed(&sarif);
    assert_eq!(fixed.len(), 1, "{sarif}");
    assert_eq!(
        fixed[0]["properties"]["adds_findings"],
        serde_json::json!(["QG105 get_webpage"])
    );
    let said = fixed[0]["fixes"][0]["description"]["text"]
        .as_str()
        .unwrap();
    assert!(said.contains("[adds finding] QG105 get_webpage"), "{said}");
    let diff = repair_and_apply(&work, &["case/agent.yaml"]);
    assert!(
        diff.starts_with("# [adds finding] QG105 get_webpage (Unrecoverable write"),
        "{diff}"
    );
    assert!(diff.contains("+    effect: write\n"), "{diff}");
    let (passed, after) = verify(Inputs::Agent(agent.clone()));
    assert!(passed, "{after:?}");
    let new: Vec<_> = after.difference(&before).collect();
    assert_eq!(
        new,
        vec![&("QG105".to_string(), "get_webpage".to_string())],
        "only the named finding is new"
    );
    assert_eq!(
        executable(Inputs::Agent(agent)),
        tools,
        "every tool stays executable"
    );
}
