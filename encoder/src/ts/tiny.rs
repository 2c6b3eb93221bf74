//! Small transition systems written by hand for the encoder's unit tests: one way to declare a
//! variable, a command and a system, so each test states only what it is about.

use super::{CmdId, Command, Decl, Expr, Label, LabelKind, TransitionSystem, VarId};

/// A variable or choice with `domain` values and no value names.
pub fn decl(name: &str, domain: u32) -> Decl {
    Decl {
        name: name.into(),
        domain,
        values: vec![],
    }
}

/// A command at `node` (its guard as given: say the node in it where it matters), labelled a
/// route, with no choices.
pub fn command(node: u32, guard: Expr, updates: Vec<(VarId, Expr)>) -> Command {
    Command {
        node,
        guard,
        updates,
        choices: vec![],
        label: Label::new(LabelKind::Route, &format!("n{node}"), None, None),
    }
}

/// A system of `vars` — the first three are `node`, `turn` and `step` — every one starting at
/// 0, no choices, `commands` indexed by their node, searched to `depth`.
pub fn system(vars: Vec<Decl>, commands: Vec<Command>, depth: u32) -> TransitionSystem {
    let mut by_node = vec![vec![]; vars[0].domain as usize];
    for (i, c) in commands.iter().enumerate() {
        by_node[c.node as usize].push(CmdId(i as u32));
    }
    TransitionSystem {
        init: vec![0; vars.len()],
        vars,
        choices: vec![],
        commands,
        by_node,
        node_var: VarId(0),
        turn_var: VarId(1),
        step_var: VarId(2),
        depth,
        implied: vec![],
    }
}
