//! Colang 1.0 and 2.x readers, following NeMo Guardrails' own parsers.
//!
//! Colang 1.0 is read as NeMo's line parser reads it: each line is a *main token* and the text
//! after it, so names are the rest of the line (`define user ask about self-harm`,
//! `execute call activefence api`: an action name is the text before its `(`), a trailing `:`
//! is dropped, `\` and a trailing `or` continue a line. Colang 2.x is read by its language
//! reference's grammar: statements are `match`/`await`/`start`/`send`/`activate`/… of spec
//! expressions joined by `and`/`or` (continuation lines included), `when`, `while`, `if`.
//!
//! Both readers share one walk: the lines become an indentation tree, and the tree is walked flow
//! by flow while tracking every path through the flow symbolically: each path carries the
//! conjunction of the conditions taken so far and the variables assigned a literal on it (so
//! `$allowed = False` / `if $allowed` folds to a path that never happens). `stop`, `abort` and
//! `return` end a path, so a guard written as `if not $ok` / `stop` governs what follows it. At
//! each `execute`/`await` of an action, the paths reaching it become its gate paths, with the
//! variables bound as the call's arguments turned into [`Operand::Arg`].
//!
//! What governs no tool (event matches, `send`, `when` on events, natural-language values and
//! `...`) is parsed and taken as a step that may happen or not, recorded as a [`Note`]; a
//! condition the IR cannot state constrains neither branch. A `while` is followed until the paths
//! into its body settle; its failed condition constrains what follows only when the body assigns
//! none of the variables it reads (else the exit is the loop's own doing, not a condition on the
//! next write). Nothing is ever turned into a refusal the runtime would not make.
//! Every refusal of a file is reported, not only the first.
//!
//! The files: `lines.rs` (logical lines and the indentation tree), `walk.rs` (the path-tracking
//! walk both dialects share), `v1.rs` (Colang 1.0 statements), `v2.rs` (Colang 2.x statements
//! and spec expressions); this file holds the entry points, the statement and compiler types
//! and the helpers both dialects call.

mod lines;
mod v1;
mod v2;
mod walk;

use lines::*;
use v2::*;

use super::expr::{
    dnf, parse_cond, parse_expr, parse_operand, refuse, tokenize, Cond, Cursor, ExprInfo, Tok,
    Token, MAX_DEPTH,
};
use super::paths::{conj_add, conj_join, simplify};
use ir::diag::InputError;
use ir::loc::Loc;
use ir::rulebook::{
    BotUse, ExecuteSite, FlowDef, GatePath, Language, Literal, Note, Operand, Rulebook, VarEvent,
    VarEventKind,
};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

/// Most paths followed through one flow before the reader refuses it as too branchy.
const MAX_PATHS: usize = 1024;

/// Most rounds a `while` body is followed before the reader refuses the loop as not settling.
const MAX_LOOP_ROUNDS: usize = 32;

/// Whether a text is Colang 1.0 (it has a top-level `define`).
pub fn is_colang1(text: &str) -> bool {
    text.lines().any(|l| l.starts_with("define "))
}

/// Compiles Colang 1.0 (`define user|bot|flow|subflow …`); what NeMo would not read either is
/// refused as `rulebook_unsupported`, every such line named.
pub fn compile_colang1(file: &str, text: &str) -> Result<Rulebook, InputError> {
    compile(file, text, Language::Colang1)
}

/// Compiles Colang 2.x (`import …`, `flow …`); what its grammar does not take is refused as
/// `rulebook_unsupported`, every such line named.
pub fn compile_colang2(file: &str, text: &str) -> Result<Rulebook, InputError> {
    compile(file, text, Language::Colang2)
}

/// Compiles one file in the given dialect (a NeMo configuration says which, for all its files).
/// `others` are the flows the other files of the configuration define, so `await other flow`
/// is not mistaken for an action.
pub(crate) fn compile_lang(
    file: &str,
    text: &str,
    lang: Language,
    others: &HashSet<String>,
) -> Result<Rulebook, InputError> {
    compile_with(file, text, lang, others)
}

/// The flows a Colang 2.x text defines (for the other files of a configuration).
pub(crate) fn flow_names2(file: &str, text: &str) -> Vec<String> {
    let lines = logical_lines(
        file,
        text,
        Language::Colang2,
        &mut Vec::new(),
        &mut Vec::new(),
    );
    build_tree(file, &lines, &mut Vec::new())
        .iter()
        .filter_map(flow2_name)
        .collect()
}

fn compile(file: &str, text: &str, lang: Language) -> Result<Rulebook, InputError> {
    compile_with(file, text, lang, &HashSet::new())
}

fn compile_with(
    file: &str,
    text: &str,
    lang: Language,
    others: &HashSet<String>,
) -> Result<Rulebook, InputError> {
    let mut errors = Vec::new();
    let mut docstrings = Vec::new();
    let lines = logical_lines(file, text, lang, &mut errors, &mut docstrings);
    let tree = build_tree(file, &lines, &mut errors);
    let mut c = Compiler {
        file,
        lang,
        rb: Rulebook::empty(file, text, lang),
        flow_names: HashSet::new(),
        flow: String::new(),
        errors,
        loops: Vec::new(),
    };
    if lang == Language::Colang2 {
        c.flow_names = tree.iter().filter_map(flow2_name).collect();
        c.flow_names.extend(others.iter().cloned());
    }
    for no in docstrings {
        c.rb.notes.push(Note {
            at: Loc::new(file, no),
            construct: "a natural-language description (`\"\"\"…\"\"\"`)".to_string(),
            treated_as: "text for the LLM; no step".to_string(),
        });
    }
    for n in &tree {
        let r = match lang {
            Language::Colang2 => c.top2(n),
            _ => c.top1(n),
        };
        if let Err(e) = r {
            c.errors.push(e);
        }
    }
    if c.errors.is_empty() {
        return Ok(c.rb);
    }
    Err(combine(c.errors))
}

/// One error carrying every refusal of a file: the first (by line) is the error's position and
/// the others are listed after it, each with its line and column.
fn combine(mut errors: Vec<InputError>) -> InputError {
    errors.sort_by_key(|e| (e.line, e.col));
    errors.dedup();
    let mut first = errors.remove(0);
    if !errors.is_empty() {
        let rest: Vec<String> = errors
            .iter()
            .map(|e| match e.col {
                Some(c) => format!("line {}:{c}: {}", e.line, e.message),
                None => format!("line {}: {}", e.line, e.message),
            })
            .collect();
        first.message = format!(
            "{} (and {} more refusal{} in this file: {})",
            first.message,
            rest.len(),
            if rest.len() == 1 { "" } else { "s" },
            rest.join("; ")
        );
    }
    first
}

/// An action call: its name and its arguments (named ones bind, positional ones are read).
#[derive(Debug, Clone)]
struct Call {
    action: String,
    args: Vec<(String, ExprInfo)>,
}

/// A statement of a flow body, parsed without side effects.
#[derive(Debug)]
enum Stmt {
    /// A step that governs no tool: what it reads, what it assigns (to unknown values), and,
    /// when it is a construct the proof does not follow, a note (construct, how it is taken).
    Step {
        reads: Vec<String>,
        assigns: Vec<String>,
        note: Option<(String, String)>,
    },
    /// `bot <message>` (`None` for `bot ...` or `bot $var`).
    Bot(Option<String>, Vec<String>),
    /// `execute`/`await`/`start` of actions, maybe assigned (`$r = await X()`, `… as $ref`).
    Exec {
        calls: Vec<Call>,
        reads: Vec<String>,
        assigns: Vec<String>,
        bots: Vec<String>,
        note: Option<(String, String)>,
    },
    /// `$var = <expression>`.
    Assign { var: String, info: ExprInfo },
    /// `stop`, `abort`, `return`: the path ends.
    Stop(Vec<String>),
    /// `break` out of the innermost `while`.
    Break,
    /// `continue` with the innermost `while`'s next round.
    Continue,
    /// `if` (`when` on a condition is the same).
    If(Cond, Vec<String>),
    /// `else if` / `elif` (`else when` on a condition).
    ElseIf(Cond, Vec<String>),
    /// `else`.
    Else,
    /// `when` on an event pattern.
    When(Vec<String>),
    /// `else when` / `or when` on an event pattern.
    OrWhen(Vec<String>),
    /// `while <cond>`.
    While(Cond, Vec<String>),
}

impl Stmt {
    fn opens_chain(&self) -> bool {
        matches!(self, Stmt::If(..) | Stmt::When(..))
    }
    fn continues_chain(&self) -> bool {
        matches!(self, Stmt::ElseIf(..) | Stmt::Else | Stmt::OrWhen(..))
    }
    fn reads(reads: Vec<String>) -> Stmt {
        Stmt::Step {
            reads,
            assigns: Vec::new(),
            note: None,
        }
    }
    fn noted(reads: Vec<String>, construct: &str, treated: &str) -> Stmt {
        Stmt::Step {
            reads,
            assigns: Vec::new(),
            note: Some((construct.to_string(), treated.to_string())),
        }
    }
}

/// One path through a flow: the conditions taken and the variables holding a known literal.
#[derive(Clone, Debug, Default, PartialEq)]
struct State {
    lits: Vec<Literal>,
    env: BTreeMap<String, Value>,
}

/// The paths leaving a `while` body early.
#[derive(Default)]
struct LoopFrame {
    breaks: Vec<State>,
    conts: Vec<State>,
}

struct Compiler<'a> {
    file: &'a str,
    lang: Language,
    rb: Rulebook,
    flow_names: HashSet<String>,
    flow: String,
    errors: Vec<InputError>,
    loops: Vec<LoopFrame>,
}

/// How a statement that may happen or not is taken.
const STEP: &str = "a step that may happen or not; it governs no tool";

/// `$name` base names in a text (strings included: Colang renders `$var` inside messages).
fn vars_in(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '$'
            && chars
                .get(i + 1)
                .is_some_and(|c| c.is_alphabetic() || *c == '_')
        {
            let start = i + 1;
            i += 1;
            while chars
                .get(i)
                .is_some_and(|c| c.is_alphanumeric() || *c == '_')
            {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else {
            i += 1;
        }
    }
    out
}

impl Compiler<'_> {
    fn loc(&self, n: &Node) -> Loc {
        Loc::new(self.file, n.line.no)
    }

    fn err(&self, n: &Node, msg: impl Into<String>) -> InputError {
        refuse(self.file, n.line.no, n.line.indent as u32 + 1, msg)
    }

    fn note(&mut self, n: &Node, construct: &str, treated: &str) {
        let at = self.loc(n);
        self.rb.notes.push(Note {
            at,
            construct: construct.to_string(),
            treated_as: treated.to_string(),
        });
    }
}

/// The tokens without a trailing `:` (Python-style block openers, which NeMo takes).
fn strip_colon(toks: &[Token]) -> &[Token] {
    match toks.split_last() {
        Some((
            Token {
                tok: Tok::Op(":"), ..
            },
            rest,
        )) if !rest.is_empty() => rest,
        _ => toks,
    }
}

/// The variables the lines of a block mention (a statement's parameter lines).
fn collect_text_vars(nodes: &[Node], out: &mut Vec<String>) {
    for n in nodes {
        out.extend(vars_in(&n.line.text));
        collect_text_vars(&n.children, out);
    }
}

/// Consumes `name =` before an argument's value, returning the name, when it is there.
fn eat_arg_name(c: &mut Cursor<'_>) -> Option<String> {
    match (c.peek(), c.peek2()) {
        (Some(Tok::Ident(k)), Some(Tok::Op("="))) => {
            let k = k.clone();
            c.pos += 2;
            Some(k)
        }
        _ => None,
    }
}

/// Call arguments after `(` through `)`: `name=expr` binds an argument, a positional `expr` is
/// only read.
fn call_args(
    c: &mut Cursor<'_>,
    args: &mut Vec<(String, ExprInfo)>,
    reads: &mut Vec<String>,
) -> Result<(), InputError> {
    while !c.eat_op(")") {
        let name = eat_arg_name(c);
        if c.at_end() {
            return Err(c.err("expected an argument or `)`"));
        }
        let info = parse_expr(c, 0)?;
        match name {
            Some(k) => args.push((k, info)),
            None => reads.extend(info.reads),
        }
        if !c.eat_op(",") {
            return c.expect_op(")");
        }
    }
    Ok(())
}

/// `$var = <expression>` after `=`.
fn assign(c: &mut Cursor<'_>, var: &str) -> Result<Stmt, InputError> {
    if c.at_end() {
        return Err(c.err("expected a value after `=`"));
    }
    let info = parse_expr(c, 0)?;
    c.expect_end()?;
    Ok(Stmt::Assign {
        var: var.to_string(),
        info,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ir::rulebook::{CmpOp, Gate};

    fn ctx(n: &str, op: CmpOp) -> Literal {
        Literal {
            operand: Operand::Context(n.into()),
            op,
            value: None,
        }
    }

    const REFUNDS: &str = "define user ask refund\n  \"refund order 4411\"\n\ndefine flow refunds\n  user ask refund\n  if $order_paid\n    execute refund_card\n  else\n    bot refuse\n";

    #[test]
    fn seed_000_refunds_flow() {
        let rb = compile_colang1("policy.co", REFUNDS).unwrap();
        let g = rb.gate("refund_card").unwrap();
        assert_eq!(g.flows, vec!["refunds"]);
        assert_eq!(g.paths.len(), 1);
        assert_eq!(g.paths[0].at.line, 7);
        assert_eq!(g.paths[0].literals, vec![ctx("order_paid", CmpOp::Truthy)]);
        assert!(!rb.executes[0].permissive);
        assert_eq!(rb.bot_uses[0].message, "refuse");
        assert_eq!(rb.vars[0].var, "order_paid");
    }

    #[test]
    fn else_branch_negates_and_is_permissive() {
        let t = "define flow f\n  if $a or $b > 3\n    bot x\n  else\n    execute w(amount=$b)\n";
        let rb = compile_colang1("p.co", t).unwrap();
        let g = rb.gate("w").unwrap();
        assert_eq!(g.paths.len(), 1);
        let l = &g.paths[0].literals;
        assert_eq!(l[0], ctx("a", CmpOp::Falsy));
        assert_eq!(
            l[1],
            Literal {
                operand: Operand::Arg("amount".into()),
                op: CmpOp::Le,
                value: Some(Value::from(3))
            }
        );
        assert!(rb.executes[0].permissive);
    }

    #[test]
    fn negated_conjunction_gives_several_paths() {
        let t = "define flow f\n  if $a and $b\n    bot x\n  else if $c\n    execute w\n";
        let g = compile_colang1("p.co", t).unwrap().gates["w"].clone();
        assert_eq!(g.paths.len(), 2);
        assert_eq!(
            g.paths[0].literals,
            vec![ctx("a", CmpOp::Falsy), ctx("c", CmpOp::Truthy)]
        );
        assert_eq!(
            g.paths[1].literals,
            vec![ctx("b", CmpOp::Falsy), ctx("c", CmpOp::Truthy)]
        );
    }

    #[test]
    fn never_folds_to_zero_paths() {
        let t = "define flow no deletes\n  $allowed = False\n  if $allowed\n    execute delete_customer\n";
        let rb = compile_colang1("p.co", t).unwrap();
        assert_eq!(
            rb.gates["delete_customer"],
            Gate {
                paths: vec![],
                flows: vec!["no deletes".into()]
            }
        );
        assert!(!rb.executes[0].permissive);
    }

    #[test]
    fn stop_guard_governs_what_follows() {
        let t = "define flow f\n  $ok = execute check\n  if not $ok\n    bot refuse\n    stop\n  execute w\n";
        let rb = compile_colang1("p.co", t).unwrap();
        assert_eq!(
            rb.gates["w"].paths[0].literals,
            vec![ctx("ok", CmpOp::Truthy)]
        );
        assert!(rb.executes[0].permissive);
        assert!(!rb.executes[1].permissive);
    }

    #[test]
    fn syntax_errors_are_refused_with_their_line() {
        let cases = [
            ("define flow f\n  user hi\n  executee w\n", 3),
            ("define flow f\n  if $a ==\n    execute w\n", 2),
            ("define flow f\n  execute w(amount=$a\n", 2),
            ("define flow f\n    bot x\n  bot y\n", 3),
            ("define flow f\n  else\n    bot x\n", 2),
            ("define flow f\n  if $a\n  bot x\n", 2),
            ("define topic x\n  hello\n", 1),
            ("define flow f\n  goto start\n", 2),
            ("flow f\n  bot x\n", 1),
            ("define flow f\n  bot \"x\n", 2),
            ("define flow f\n  \"\"\"doc\n", 2),
            ("define flow f\n\tbot x\n", 2),
        ];
        for (t, line) in cases {
            let e = compile_colang1("p.co", t).expect_err(t);
            assert_eq!(e.line, line, "{t}: {e}");
            assert_eq!(e.code.as_deref(), Some("rulebook_unsupported"));
        }
    }

    #[test]
    fn colang2_await_and_elif() {
        let t = "import core\n\nflow guard $x\n  \"\"\"Doc.\"\"\"\n  $ok = await CheckAction(text=$x)\n  if $ok and $n > 2\n    await refund_card(amount=$n)\n  elif $m\n    bot say \"no\"\n  else\n    abort\n";
        let rb = compile_colang2("p.co", t).unwrap();
        let g = &rb.gates["refund_card"];
        assert_eq!(
            g.paths[0].literals[1].operand,
            Operand::Arg("amount".into())
        );
        assert!(rb.gates.contains_key("CheckAction"));
        assert_eq!(rb.bot_uses[0].message, "say");
    }

    #[test]
    fn colang2_names_mcp_tools_with_dots_and_dashes_but_keeps_members() {
        let t = "import core\n\nflow f\n  if $ok\n    await get-sum(a=$a)\n    await admin.tools.list()\n    await github.CreateIssue()\n  $r = start Long.Job()\n  await Fetch.Finished()\n  match UtteranceUserAction.TranscriptUpdated()\n";
        let rb = compile_colang2("p.co", t).unwrap_or_else(|e| panic!("{e}"));
        let gated: Vec<&str> = rb.gates.keys().map(String::as_str).collect();
        assert_eq!(
            gated,
            [
                "get-sum",
                "admin.tools.list",
                "github.CreateIssue",
                "Long.Job"
            ]
        );
        assert!(
            !rb.gates.contains_key("Fetch"),
            "`.Finished` is a member: {gated:?}"
        );
    }

    #[test]
    fn colang2_refuses_outside_the_subset() {
        for (t, line) in [
            ("flow f\n  for $x in $y\n    bot say \"x\"\n", 2),
            ("flow f\n  break\n", 2),
            ("import\n", 1),
            ("flow f\n  if\n    abort\n", 2),
            ("define flow f\n", 1),
            ("flow f\n  send X(a=\n", 2),
        ] {
            let e = compile_colang2("p.co", t).expect_err(t);
            assert_eq!(e.line, line, "{t}: {e}");
        }
    }

    #[test]
    fn never_panics_on_odd_input() {
        for t in [
            "",
            "\n\n",
            "define",
            "define flow",
            "define flow f\n  $",
            "define flow f\n  $x =",
            "define flow f\n  if (",
            "flow\n",
            "flow f\n  $x = await",
            "define flow f\n  execute",
            "\"\"\"",
            "define flow f\n  if $x[\"a\n",
        ] {
            let _ = compile_colang1("p.co", t);
            let _ = compile_colang2("p.co", t);
        }
    }

    #[test]
    fn regression_many_if_paths_no_timeout() {
        // Found by the colang2 fuzzer: a flow whose `if`s multiply the paths into an `execute`
        // made path simplification rescan every pair after each merge (seconds for 1 KB, minutes
        // for ten `if`s). Ten independent `if`s give 1024 paths, which merge to one open path.
        let mut t = String::from("flow main\n");
        for i in 0..10 {
            t.push_str(&format!("  if $c{i}\n    bot say \"x\"\n"));
        }
        t.push_str("  await refund_card(amount=$n)\n  await refund_card(amount=$n)\n");
        let start = std::time::Instant::now();
        let rb = compile_colang2("p.co", &t).unwrap();
        assert!(start.elapsed().as_secs() < 5, "{:?}", start.elapsed());
        let gate = &rb.gates["refund_card"];
        assert!(
            gate.paths.iter().all(|p| p.literals.is_empty()),
            "{:?}",
            gate.paths
        );
    }
}
