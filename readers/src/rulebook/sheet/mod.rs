//! The rule sheet: a small, strict YAML subset stating rules over tools (`seeds/003`), compiled to
//! the rulebook IR, a catalogue overlay, and the equivalent Colang 1.0 (`rule_sheet.co`).
//!
//! The sheet is read by hand, not by a YAML library: the subset is `rules:` and then `- key: value`
//! items whose values are scalars, flow lists (`[a, b]`) and flow maps (`{amount_over: 200}`).
//! Everything else (tabs, block lists, a value on the line below its key, a second document,
//! anchors, tags, block scalars, ambiguous plain scalars such as `yes`) is refused with its line,
//! so a sheet never means something its author did not write.

use super::expr::number_value;
use super::paths::{conj_add, simplify};
use ir::catalogue::{is_tool_name, ArgCheck};
use ir::diag::{unknown_key_message, InputError};
use ir::loc::Loc;
use ir::rulebook::{
    CatalogueOverlay, CmpOp, ExecuteSite, FlowDef, Gate, GatePath, Language, Literal, Operand,
    Rulebook, ToolOverlay, VarEvent, VarEventKind,
};
use ir::vocab::CheckOp;
use serde_json::Value;
use std::path::Path;

mod to_colang;
mod yaml;

use to_colang::*;
use yaml::*;

/// The overlay's format tag.
pub const OVERLAY_FORMAT: &str = "qls-catalogue-overlay/1";

/// A compiled sheet: the IR, the overlay and the equivalent Colang.
#[derive(Clone, Debug, PartialEq)]
pub struct CompiledSheet {
    /// The IR.
    pub rulebook: Rulebook,
    /// What the sheet lays over the catalogue.
    pub overlay: CatalogueOverlay,
    /// The equivalent Colang 1.0 text (`rule_sheet.co`).
    pub colang: String,
}

/// The keys a rule may have.
const RULE_KEYS: &[&str] = &[
    "action",
    "requires",
    "when",
    "never",
    "requires_confirmation",
    "confirmation",
    "after",
    "not_after",
    "at_most",
    "check",
    "model_may_write",
];

/// The comparisons a `when` key may end with, and what each compiles to.
const WHEN_SUFFIXES: &[(&str, CmpOp)] = &[
    ("_at_least", CmpOp::Ge),
    ("_at_most", CmpOp::Le),
    ("_over", CmpOp::Gt),
    ("_under", CmpOp::Lt),
    ("_is", CmpOp::Eq),
];

/// Largest magnitude a sheet number may have, so every number compares exactly.
const MAX_EXACT: f64 = 9_007_199_254_740_992.0;

/// Compiles a rule sheet; a sheet outside what the compiler can state exactly is refused with
/// its line.
pub fn compile_sheet(file: &str, text: &str) -> Result<CompiledSheet, InputError> {
    let items = read_items(file, text)?;
    let mut rules: Vec<Rule> = Vec::new();
    for item in &items {
        let rule = read_rule(file, item)?;
        if let Some(first) = rules.iter().find(|r| r.action == rule.action) {
            return Err(refusal(file, rule.action_line, format!("a second rule for `{}` (the first is at line {}): how two rules would combine is never guessed; state it as one rule", rule.action, first.line)));
        }
        rules.push(rule);
    }
    Ok(build(file, text, &rules))
}

fn refusal(file: &str, line: u32, msg: impl Into<String>) -> InputError {
    InputError::at(file, line, msg).with_code("rulebook_unsupported")
}

// ---------------------------------------------------------------------------------------------
// Rules.

/// One rule as read.
#[derive(Clone, Debug)]
struct Rule {
    action: String,
    line: u32,
    action_line: u32,
    requires: Vec<String>,
    when: Vec<Literal>,
    never: bool,
    overlay: Option<ToolOverlay>,
}

fn is_ident(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What a tool-name slot expects, as its refusal says it: the MCP grammar, so a refused name
/// says which characters are allowed rather than only that it is not a name.
const TOOL_NAME: &str = "a tool name (letters, digits, `_`, `-` and `.`, at most 128)";

fn is_context_name(s: &str) -> bool {
    s.split('.').all(is_ident)
}

/// Whether `src` can be `<tool>.<field path>` at some `.`: the tool may contain `.` and `-`, so
/// every split is tried here; which one is meant is the catalogue's to say
/// (`Catalogue::split_from`: the longest declared tool).
fn is_from_ref(src: &str) -> bool {
    src.match_indices('.')
        .any(|(i, _)| is_tool_name(&src[..i]) && is_context_name(&src[i + 1..]))
}

fn read_rule(file: &str, item: &Item) -> Result<Rule, InputError> {
    for (k, e) in item.entries.iter().enumerate() {
        if !RULE_KEYS.contains(&e.key.as_str()) {
            return Err(refusal(
                file,
                e.line,
                unknown_key_message(&e.key, RULE_KEYS),
            ));
        }
        if let Some(first) = item.entries.iter().take(k).find(|p| p.key == e.key) {
            return Err(refusal(
                file,
                e.line,
                format!(
                    "`{}` is given twice in one rule (first at line {})",
                    e.key, first.line
                ),
            ));
        }
    }
    let get = |k: &str| item.entries.iter().find(|e| e.key == k);
    let action_e = get("action").ok_or_else(|| {
        refusal(
            file,
            item.line,
            "a rule names its action: `- action: <tool>`",
        )
    })?;
    let action = name_of(file, action_e, is_tool_name, TOOL_NAME)?;
    if item.entries.len() == 1 {
        return Err(refusal(
            file,
            item.line,
            format!(
                "the rule for `{action}` says nothing: give it one or more of {}",
                RULE_KEYS.get(1..).unwrap_or_default().join(", ")
            ),
        ));
    }
    let never = match get("never") {
        None => false,
        Some(e) => read_never(file, e, item)?,
    };
    let requires = match get("requires") {
        None => Vec::new(),
        Some(e) => name_list(file, e, is_context_name, "a context name")?,
    };
    let when = match get("when") {
        None => Vec::new(),
        Some(e) if requires.is_empty() => return Err(refusal(file, e.line, "`when` on a rule that requires nothing: `when` says when the requirements apply, so give `requires: [...]`")),
        Some(e) => read_when(file, e)?,
    };
    let overlay = read_overlay(file, item)?;
    Ok(Rule {
        action,
        line: item.line,
        action_line: action_e.line,
        requires,
        when,
        never,
        overlay,
    })
}

fn read_never(file: &str, e: &Entry, item: &Item) -> Result<bool, InputError> {
    if e.val != Val::Bool(true) {
        return Err(refusal(
            file,
            e.line,
            format!("`never` is `true` or absent; found {}", e.val.describe()),
        ));
    }
    if let Some(other) = item
        .entries
        .iter()
        .find(|o| o.key != "never" && o.key != "action")
    {
        return Err(refusal(
            file,
            e.line,
            format!(
                "`never` with `{}` beside it: an action that never runs has no other rule",
                other.key
            ),
        ));
    }
    Ok(true)
}

fn name_of(file: &str, e: &Entry, ok: fn(&str) -> bool, what: &str) -> Result<String, InputError> {
    match &e.val {
        Val::Str(s) if ok(s) => Ok(s.clone()),
        v => Err(refusal(
            file,
            e.line,
            format!("`{}` expects {what}; found {}", e.key, v.describe()),
        )),
    }
}

fn name_list(
    file: &str,
    e: &Entry,
    ok: fn(&str) -> bool,
    what: &str,
) -> Result<Vec<String>, InputError> {
    let Val::List(items) = &e.val else {
        return Err(refusal(
            file,
            e.line,
            format!(
                "`{}` expects a list, `[a, b]`; found {}",
                e.key,
                e.val.describe()
            ),
        ));
    };
    if items.is_empty() {
        return Err(refusal(
            file,
            e.line,
            format!("`{}` is an empty list", e.key),
        ));
    }
    let mut out: Vec<String> = Vec::new();
    for v in items {
        match v {
            Val::Str(s) if ok(s) && !out.contains(s) => out.push(s.clone()),
            Val::Str(s) if out.contains(s) => {
                return Err(refusal(
                    file,
                    e.line,
                    format!("`{}` names `{s}` twice", e.key),
                ))
            }
            v => {
                return Err(refusal(
                    file,
                    e.line,
                    format!("each item of `{}` is {what}; found {}", e.key, v.describe()),
                ))
            }
        }
    }
    Ok(out)
}

/// `when: {amount_over: 200, tier_is: gold}` as literals on the call's arguments.
fn read_when(file: &str, e: &Entry) -> Result<Vec<Literal>, InputError> {
    let Val::Map(pairs) = &e.val else {
        return Err(refusal(
            file,
            e.line,
            format!(
                "`when` expects a mapping such as `{{amount_over: 200}}`; found {}",
                e.val.describe()
            ),
        ));
    };
    if pairs.is_empty() {
        return Err(refusal(file, e.line, "`when` states no comparison"));
    }
    let mut out = Vec::new();
    for (k, v) in pairs {
        let found = WHEN_SUFFIXES.iter().find_map(|(suf, op)| {
            k.strip_suffix(suf)
                .filter(|a| is_ident(a))
                .map(|a| (a, *op))
        });
        let Some((arg, op)) = found else {
            return Err(refusal(file, e.line, format!("`{k}` states no comparison the compiler can state: write `<argument>_over`, `_under`, `_at_least`, `_at_most` or `_is`")));
        };
        let value = match (op, v) {
            (CmpOp::Eq, Val::Str(_) | Val::Num(_) | Val::Bool(_)) => v.to_json(),
            (CmpOp::Eq, _) => {
                return Err(refusal(
                    file,
                    e.line,
                    format!(
                        "`{k}` compares with {}; `_is` takes one value",
                        v.describe()
                    ),
                ))
            }
            (_, Val::Num(n)) => n.clone(),
            (_, _) => {
                return Err(refusal(
                    file,
                    e.line,
                    format!(
                        "`{k}` compares a number with {}, which is not one",
                        v.describe()
                    ),
                ))
            }
        };
        out.push(Literal {
            operand: Operand::Arg(arg.to_string()),
            op,
            value: Some(value),
        });
    }
    Ok(out)
}

/// Confirmations, order rules and checks, laid over the catalogue.
fn read_overlay(file: &str, item: &Item) -> Result<Option<ToolOverlay>, InputError> {
    let mut o = ToolOverlay::default();
    let mut any = false;
    for e in &item.entries {
        match e.key.as_str() {
            "requires_confirmation" => match e.val {
                Val::Bool(b) => o.requires_confirmation |= b,
                _ => {
                    return Err(refusal(
                        file,
                        e.line,
                        format!(
                            "`requires_confirmation` is `true` or `false`; found {}",
                            e.val.describe()
                        ),
                    ))
                }
            },
            "confirmation" => match &e.val {
                Val::Str(s) if !s.trim().is_empty() => {
                    o.confirmation = Some(s.clone());
                    o.requires_confirmation = true;
                }
                v => {
                    return Err(refusal(
                        file,
                        e.line,
                        format!(
                            "`confirmation` is the words the person is asked; found {}",
                            v.describe()
                        ),
                    ))
                }
            },
            "after" => o.after = name_list(file, e, is_tool_name, TOOL_NAME)?,
            "not_after" => o.not_after = name_list(file, e, is_tool_name, TOOL_NAME)?,
            "at_most" => o.at_most = Some(read_count(file, e)?),
            "check" => o.checks = read_checks(file, e)?,
            "model_may_write" => {
                o.model_may_write = name_list(file, e, is_ident, "an argument name")?;
                o.model_may_write_at = Some(Loc::new(file, e.line));
            }
            _ => continue,
        }
        any = true;
    }
    Ok(any.then_some(o))
}

fn read_count(file: &str, e: &Entry) -> Result<u32, InputError> {
    match &e.val {
        Val::Num(n) if n.as_u64().is_some_and(|u| u <= u32::MAX as u64) => {
            Ok(n.as_u64().unwrap_or_default() as u32)
        }
        v => Err(refusal(
            file,
            e.line,
            format!(
                "`at_most` is a whole number of runs; found {}",
                v.describe()
            ),
        )),
    }
}

/// `check: [{field: quantity, at_most: {from: check_stock.in_stock}}]`.
fn read_checks(file: &str, e: &Entry) -> Result<Vec<ArgCheck>, InputError> {
    let Val::List(items) = &e.val else {
        return Err(refusal(
            file,
            e.line,
            format!(
                "`check` expects a list of conditions; found {}",
                e.val.describe()
            ),
        ));
    };
    let mut out = Vec::new();
    for it in items {
        let Val::Map(pairs) = it else {
            return Err(refusal(
                file,
                e.line,
                format!(
                    "a check is a mapping `{{field: f, <comparison>: value}}`; found {}",
                    it.describe()
                ),
            ));
        };
        let field = match pairs.iter().find(|(k, _)| k == "field") {
            Some((_, Val::Str(f))) if is_ident(f) => f.clone(),
            _ => {
                return Err(refusal(
                    file,
                    e.line,
                    "a check names its argument: `field: <argument>`",
                ))
            }
        };
        let ops: Vec<&(String, Val)> = pairs.iter().filter(|(k, _)| k != "field").collect();
        let [(op, v)] = ops.as_slice() else {
            return Err(refusal(
                file,
                e.line,
                format!(
                    "a check on `{field}` makes exactly one comparison ({})",
                    CheckOp::names().join(", ")
                ),
            ));
        };
        let Some(check_op) = CheckOp::from_name(op) else {
            return Err(refusal(
                file,
                e.line,
                unknown_key_message(op, &CheckOp::names()),
            ));
        };
        out.push(ArgCheck {
            field,
            op: check_op,
            value: check_value(file, e.line, op, v)?,
        });
    }
    Ok(out)
}

fn check_value(file: &str, line: u32, op: &str, v: &Val) -> Result<Value, InputError> {
    if let Val::Map(m) = v {
        return match m.as_slice() {
            [(k, Val::Str(src))] if k == "from" && is_from_ref(src) => {
                Ok(v.to_json())
            }
            _ => Err(refusal(
                file,
                line,
                "a value from an earlier tool is written `{from: <tool>.<field>}` (the tool as MCP names it, `admin.tools.list.count` included)",
            )),
        };
    }
    let ok = match op {
        "in" | "not_in" => {
            matches!(v, Val::List(l) if l.iter().all(|x| matches!(x, Val::Str(_) | Val::Num(_) | Val::Bool(_))))
        }
        "is" => matches!(v, Val::Str(_) | Val::Num(_) | Val::Bool(_)),
        _ => matches!(v, Val::Num(_)),
    };
    if !ok {
        let wants = match op {
            "in" | "not_in" => "a list of values",
            "is" => "one value",
            _ => "a number",
        };
        return Err(refusal(
            file,
            line,
            format!("`{op}` compares with {wants}; found {}", v.describe()),
        ));
    }
    Ok(v.to_json())
}

// ---------------------------------------------------------------------------------------------
// Compiling.

/// The flow a rule compiles to.
fn flow_name(action: &str) -> String {
    format!("rule {action}")
}

/// A rule's gate paths: `requires` with `when` (C1..Cn) allows iff not C or every requirement
/// holds, so one path per negated Ci, then [C1..Cn, requirements].
fn rule_paths(r: &Rule) -> Vec<Vec<Literal>> {
    if r.never {
        return Vec::new();
    }
    let reqs = r.requires.iter().map(|a| Literal {
        operand: Operand::Context(a.clone()),
        op: CmpOp::Truthy,
        value: None,
    });
    let mut paths: Vec<Vec<Literal>> = r
        .when
        .iter()
        .filter_map(|c| {
            conj_add(
                Vec::new(),
                Literal {
                    op: c.op.negate(),
                    ..c.clone()
                },
            )
        })
        .collect();
    if let Some(all) = r
        .when
        .iter()
        .cloned()
        .chain(reqs)
        .try_fold(Vec::new(), conj_add)
    {
        paths.push(all);
    }
    simplify(paths)
}

fn governs(r: &Rule) -> bool {
    r.never || !r.requires.is_empty()
}

fn build(file: &str, text: &str, rules: &[Rule]) -> CompiledSheet {
    let mut rb = Rulebook::empty(file, text, Language::Sheet);
    let mut overlay = CatalogueOverlay {
        format: OVERLAY_FORMAT.to_string(),
        tools: Default::default(),
    };
    for r in rules {
        if let Some(o) = &r.overlay {
            overlay.tools.insert(r.action.clone(), o.clone());
        }
        if !governs(r) {
            continue;
        }
        let flow = flow_name(&r.action);
        let at = Loc::new(file, r.line);
        rb.flows.push(FlowDef {
            name: flow.clone(),
            at: at.clone(),
        });
        for a in &r.requires {
            rb.vars.push(VarEvent {
                var: a.clone(),
                flow: flow.clone(),
                kind: VarEventKind::Read,
                at: at.clone(),
            });
        }
        rb.executes.push(ExecuteSite {
            action: r.action.clone(),
            flow: flow.clone(),
            at: at.clone(),
            permissive: false,
        });
        let paths = rule_paths(r)
            .into_iter()
            .map(|literals| GatePath {
                flow: flow.clone(),
                at: at.clone(),
                literals,
            })
            .collect();
        rb.gates.insert(
            r.action.clone(),
            Gate {
                paths,
                flows: vec![flow],
            },
        );
    }
    let colang = to_colang(file, rules);
    CompiledSheet {
        rulebook: rb,
        overlay,
        colang,
    }
}

// ---------------------------------------------------------------------------------------------
// Writing and lints.

/// Writes `rulebook.ir.json`, `catalogue_overlay.json` and `rule_sheet.co` to `dir` (created if
/// needed). Compile first: a refused sheet never reaches this, so nothing is written for it.
pub fn write_compiled(dir: &Path, c: &CompiledSheet) -> std::io::Result<()> {
    let ir = serde_json::to_string_pretty(&c.rulebook).map_err(std::io::Error::other)?;
    let ov = serde_json::to_string_pretty(&c.overlay).map_err(std::io::Error::other)?;
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("rulebook.ir.json"), ir + "\n")?;
    std::fs::write(dir.join("catalogue_overlay.json"), ov + "\n")?;
    std::fs::write(dir.join("rule_sheet.co"), &c.colang)
}

/// The names of the files [`write_compiled`] writes, in order.
pub const COMPILED_FILES: &[&str] = &[
    "rulebook.ir.json",
    "catalogue_overlay.json",
    "rule_sheet.co",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rulebook::colang::compile_colang1;

    const SEED: &str = "rules:\n- action: refund_card\n  requires: [supervisor_approved]\n  when: { amount_over: 200 }\n- action: charge_card\n  requires_confirmation: true\n- action: send_receipt\n  after: [charge_card]\n  at_most: 1\n";

    /// The gates without their lines: what must agree between a sheet and its Colang.
    type Shape = Vec<(String, Vec<String>, Vec<(String, Vec<Literal>)>)>;

    fn shape(rb: &Rulebook) -> Shape {
        rb.gates
            .iter()
            .map(|(a, g)| {
                (
                    a.clone(),
                    g.flows.clone(),
                    g.paths
                        .iter()
                        .map(|p| (p.flow.clone(), p.literals.clone()))
                        .collect(),
                )
            })
            .collect()
    }

    fn round_trips(sheet: &str) {
        let c = compile_sheet("rules.yaml", sheet).unwrap_or_else(|e| panic!("{e}"));
        let back = compile_colang1("rule_sheet.co", &c.colang)
            .unwrap_or_else(|e| panic!("{e}\n{}", c.colang));
        assert_eq!(shape(&c.rulebook), shape(&back), "{}", c.colang);
    }

    #[test]
    fn seed_003_sheet_compiles() {
        let c = compile_sheet("rules.yaml", SEED).unwrap();
        let g = &c.rulebook.gates["refund_card"];
        assert_eq!(g.flows, vec!["rule refund_card"]);
        assert_eq!(g.paths.len(), 2);
        assert_eq!(
            g.paths[0].literals,
            vec![Literal {
                operand: Operand::Arg("amount".into()),
                op: CmpOp::Le,
                value: Some(200.into())
            }]
        );
        assert_eq!(
            g.paths[1].literals[0],
            Literal {
                operand: Operand::Arg("amount".into()),
                op: CmpOp::Gt,
                value: Some(200.into())
            }
        );
        assert_eq!(
            g.paths[1].literals[1],
            Literal {
                operand: Operand::Context("supervisor_approved".into()),
                op: CmpOp::Truthy,
                value: None
            }
        );
        assert_eq!(c.rulebook.gates.len(), 1);
        assert_eq!(c.overlay.format, OVERLAY_FORMAT);
        assert!(c.overlay.tools["charge_card"].requires_confirmation);
        assert_eq!(c.overlay.tools["send_receipt"].after, vec!["charge_card"]);
        assert_eq!(c.overlay.tools["send_receipt"].at_most, Some(1));
        assert!(c.colang.contains("execute refund_card(amount=$amount)"));
    }

    #[test]
    fn seed_003_colang_round_trips() {
        round_trips(SEED);
    }

    #[test]
    fn other_sheets_round_trip() {
        round_trips("rules:\n  - action: delete_customer\n    never: true\n  - action: wire\n    requires: [a, b]\n  - action: refund\n    requires: [amount, vip]\n    when: {amount_at_least: 10.5, tier_is: \"gold \\\"x\\\"\", note_is: 'it''s', flag_is: true, n_under: -3}\n");
        round_trips("rules: []\n");
        round_trips("rules:\n- action: w\n  requires: [ok]\n  when: {x_over: 5, x_at_most: 5}\n");
        let c = compile_sheet("r.yaml", "rules:\n- action: d\n  never: true\n").unwrap();
        assert_eq!(c.rulebook.gates["d"].paths.len(), 0);
    }

    #[test]
    fn check_and_confirmation_go_to_the_overlay() {
        let c = compile_sheet("r.yaml", "rules:\n- action: order  # comment\n  confirmation: \"Order it? #1\"\n  check: [{field: quantity, at_most: {from: check_stock.in_stock}}, {field: colour, in: [red, blue]}]\n").unwrap();
        let o = &c.overlay.tools["order"];
        assert!(o.requires_confirmation);
        assert_eq!(o.confirmation.as_deref(), Some("Order it? #1"));
        assert_eq!(
            o.checks[0].value,
            serde_json::json!({"from": "check_stock.in_stock"})
        );
        assert_eq!(o.checks[1].value, serde_json::json!(["red", "blue"]));
        assert!(c.rulebook.gates.is_empty());
    }

    fn refused_at(sheet: &str, line: u32) -> InputError {
        let e = compile_sheet("rules.yaml", sheet).expect_err(sheet);
        assert_eq!(e.line, line, "{sheet}: {e}");
        e
    }

    #[test]
    fn refuses_an_unknown_key() {
        let e = refused_at("rules:\n- action: a\n  require: [x]\n", 3);
        assert!(e.message.contains("did you mean `requires`"), "{e}");
        refused_at("rule:\n- action: a\n", 1);
    }

    #[test]
    fn refuses_a_second_rule_for_an_action() {
        refused_at(
            "rules:\n- action: a\n  requires: [x]\n- action: a\n  at_most: 2\n",
            4,
        );
    }

    #[test]
    fn refuses_never_with_anything_beside_it() {
        refused_at("rules:\n- action: a\n  never: true\n  at_most: 2\n", 3);
        refused_at("rules:\n- action: a\n  never: false\n", 3);
    }

    #[test]
    fn refuses_when_without_requires() {
        refused_at(
            "rules:\n- action: a\n  when: {amount_over: 2}\n  at_most: 1\n",
            3,
        );
    }

    #[test]
    fn refuses_a_condition_with_no_comparison() {
        refused_at(
            "rules:\n- action: a\n  requires: [x]\n  when: {amount: 200}\n",
            4,
        );
        refused_at(
            "rules:\n- action: a\n  requires: [x]\n  when: {amount_above: 200}\n",
            4,
        );
        refused_at("rules:\n- action: a\n  requires: [x]\n  when: {}\n", 4);
    }

    #[test]
    fn refuses_a_number_compared_with_a_non_number() {
        refused_at(
            "rules:\n- action: a\n  requires: [x]\n  when: {amount_over: \"lots\"}\n",
            4,
        );
        refused_at(
            "rules:\n- action: a\n  requires: [x]\n  when: {amount_over: lots}\n",
            4,
        );
    }

    #[test]
    fn refuses_tabs() {
        let e = refused_at("rules:\n- action: a\n\trequires: [x]\n", 3);
        assert_eq!(e.col, Some(1));
    }

    #[test]
    fn refuses_a_block_list() {
        refused_at("rules:\n- action: a\n  requires:\n    - x\n", 3);
        refused_at("rules:\n- action: a\n  requires:\n  - x\n", 3);
        refused_at("rules:\n- action: a\n  requires: [x]\n  - y\n", 4);
    }

    #[test]
    fn refuses_a_value_below_its_key() {
        refused_at("rules:\n- action: a\n  when:\n    {amount_over: 2}\n", 3);
        refused_at("rules:\n- action:\n    a\n", 2);
    }

    #[test]
    fn refuses_a_second_document() {
        refused_at(
            "---\nrules:\n- action: a\n  at_most: 1\n---\nrules: []\n",
            5,
        );
    }

    #[test]
    fn refuses_other_yaml() {
        refused_at("rules:\n- action: a\n  at_most: &x 1\n", 3);
        refused_at("rules:\n- action: a\n  requires: [yes]\n", 3);
        refused_at("rules:\n- action: a\n  requires: [x\n", 3);
        refused_at("rules:\n- action: a\n", 2);
        refused_at("rules:\n- action: a\n  at_most: 1\n  at_most: 2\n", 4);
        refused_at(
            "rules:\n- action: a\n  requires: [x]\n  when: {n_over: 1e400}\n",
            4,
        );
        refused_at("rules:\n- requires: [x]\n", 2);
        refused_at("", 0);
    }

    #[test]
    fn never_panics_on_odd_input() {
        for t in [
            "rules:\n-",
            "rules:\n- \n",
            "rules:\n- action: [",
            "rules:\n- action: {a: {b: {c: {d: {e: {f: {g: {h: {i: {j: 1}}}}}}}}}}",
            "rules:\n- action: \"\\",
            "rules:\n- a: b: c",
            "\u{feff}rules: []",
            "rules:\n- action: 'x",
        ] {
            let _ = compile_sheet("r.yaml", t);
        }
    }

    #[test]
    fn mcp_tool_names_are_named_plain_or_quoted() {
        let sheet = "rules:\n- action: get-sum\n  requires: [user_verified]\n- action: \"admin.tools.list\"\n  after: [get-sum, 'fs.read']\n  at_most: 2\n- action: 'a.b-c'\n  never: true\n";
        let c = compile_sheet("rules.yaml", sheet).unwrap_or_else(|e| panic!("{e}"));
        let gated: Vec<&str> = c.rulebook.gates.keys().map(String::as_str).collect();
        assert_eq!(gated, vec!["get-sum", "a.b-c"]);
        assert!(c.rulebook.gates["a.b-c"].paths.is_empty());
        let o = &c.overlay.tools["admin.tools.list"];
        assert_eq!(o.after, vec!["get-sum", "fs.read"]);
        assert!(c.colang.contains("execute get-sum\n"), "{}", c.colang);
        let e = compile_sheet(
            "rules.yaml",
            "rules:\n- action: \"get sum\"\n  at_most: 1\n",
        )
        .unwrap_err();
        assert_eq!(e.line, 2);
        assert!(
            e.message.contains("letters, digits, `_`, `-` and `.`"),
            "{e}"
        );
        let e = compile_sheet("rules.yaml", "rules:\n- action: a\n  after: [b/c]\n").unwrap_err();
        assert!(
            e.message.contains("each item of `after` is a tool name"),
            "{e}"
        );
    }

    #[test]
    fn a_check_reads_from_a_dotted_or_dashed_tool_by_the_longest_declared_name() {
        let sheet = "rules:\n- action: get-sum\n  check: [{field: a, at_most: {from: admin.tools.list.count}}, {field: b, under: {from: fs.read-file.size.bytes}}, {field: c, is: {from: nowhere.x}}]\n";
        let c = compile_sheet("rules.yaml", sheet).unwrap_or_else(|e| panic!("{e}"));
        let checks = &c.overlay.tools["get-sum"].checks;
        assert_eq!(
            checks[0].value,
            serde_json::json!({"from": "admin.tools.list.count"})
        );
        let cat = crate::catalogue::read_catalogue("c.yaml", "tools:\n  get-sum: {effect: read}\n  admin: {effect: read}\n  admin.tools.list: {effect: read}\n  fs.read-file: {effect: read}\n").unwrap();
        // `admin` is declared too: the longer declared name wins.
        assert_eq!(
            cat.split_from("admin.tools.list.count"),
            Some(("admin.tools.list", "count"))
        );
        assert_eq!(cat.split_from("admin.version"), Some(("admin", "version")));
        assert_eq!(
            cat.split_from("fs.read-file.size.bytes"),
            Some(("fs.read-file", "size.bytes"))
        );
        assert_eq!(
            cat.split_from("admin.tools.list"),
            Some(("admin", "tools.list"))
        );
        assert_eq!(cat.split_from("nowhere.x"), None);
        assert_eq!(cat.split_from("get-sum."), None);
        // The lint on `nowhere.x`: obligations::lints::sheet_lints.
        for bad in [
            "{from: get-sum}",
            "{from: get-sum.a-b}",
            "{from: \"get sum.x\"}",
        ] {
            let e = compile_sheet(
                "rules.yaml",
                &format!("rules:\n- action: t\n  check: [{{field: a, is: {bad}}}]\n"),
            )
            .unwrap_err();
            assert!(e.message.contains("{from: <tool>.<field>}"), "{bad}: {e}");
        }
    }

    #[test]
    fn model_may_write_merges_into_the_tool_and_a_wrong_name_is_refused_at_the_sheets_line() {
        let sheet =
            "rules:\n- action: send_money\n  at_most: 3\n  model_may_write: [subject, date]\n";
        let c = compile_sheet("rules.yaml", sheet).unwrap();
        let o = &c.overlay.tools["send_money"];
        assert_eq!(o.model_may_write, ["subject", "date"]);
        let cat_text = "tools:\n  send_money:\n    effect: write\n    args: {type: object, properties: {recipient: {type: string}, subject: {type: string}, date: {type: string}}}\n    arg_kinds: {recipient: destination}\n    model_may_write: [date]\n";
        let mut cat = crate::catalogue::read_catalogue("bank.catalogue.yaml", cat_text).unwrap();
        c.overlay.apply(&mut cat);
        crate::catalogue::check_merged(&cat).unwrap();
        assert_eq!(
            cat.get("send_money").unwrap().model_may_write,
            ["date", "subject"]
        );
        // The compiled folder keeps it, and where the sheet said it.
        let back: ir::rulebook::CatalogueOverlay =
            serde_json::from_str(&serde_json::to_string(&c.overlay).unwrap()).unwrap();
        assert_eq!(back, c.overlay);
        // An argument the tool does not declare, or a destination: refused at the sheet's line.
        for (names, says) in [
            ("[subjet]", "did you mean `subject`"),
            ("[recipient]", "`destination` argument"),
        ] {
            let c = compile_sheet(
                "rules.yaml",
                &format!("rules:\n- action: send_money\n  model_may_write: {names}\n"),
            )
            .unwrap();
            let mut cat =
                crate::catalogue::read_catalogue("bank.catalogue.yaml", cat_text).unwrap();
            c.overlay.apply(&mut cat);
            let e = crate::catalogue::check_merged(&cat).unwrap_err();
            assert_eq!((e.file.as_str(), e.line), ("rules.yaml", 3), "{e}");
            assert!(e.message.contains(says), "{e}");
        }
    }

    #[test]
    fn model_may_write_is_a_list_of_argument_names() {
        for (value, says) in [
            ("subject", "expects a list"),
            ("[]", "empty list"),
            ("[subject, subject]", "names `subject` twice"),
            ("[\"a b\"]", "an argument name"),
            ("[{x: 1}]", "an argument name"),
        ] {
            let e = compile_sheet(
                "rules.yaml",
                &format!("rules:\n- action: send_money\n  model_may_write: {value}\n"),
            )
            .unwrap_err();
            assert_eq!(e.line, 3, "{value}: {e}");
            assert!(e.message.contains(says), "{value}: {e}");
        }
    }

    #[test]
    fn writes_the_compiled_folder() {
        let tmp = tempfile::Builder::new()
            .prefix("qls-sheet-test-")
            .tempdir()
            .unwrap();
        let dir = tmp.path().join("compiled");
        let c = compile_sheet("rules.yaml", SEED).unwrap();
        write_compiled(&dir, &c).unwrap();
        let back = crate::rulebook::read_compiled_dir(&dir, "compiled").unwrap();
        assert_eq!(back.rulebook, c.rulebook);
        assert_eq!(back.overlay, c.overlay);
    }
}
