//! Per-obligation slicing: for a group of obligations, the part of the system a search for
//! them needs — the commands that can still lead to one of the group's bad steps, and the state
//! variables those commands and the group's conditions depend on. Most obligations of a large
//! fleet are about one agent's tool, so their slice leaves out the other agents' marks and
//! provenance, which is where the state space multiplies.
//!
//! Every part **over-approximates what can lead to a violation**, so nothing a legal run needs
//! to reach a bad step is dropped:
//! - the nodes kept are those from which a group command can be reached over the node graph
//!   the commands' `node` updates allow (`flow::command_targets`, which makes every node a
//!   target of an update it cannot read; turn ends are part of those updates, so the edge back
//!   to the next turn's start is followed too). From any other node no step of any legal run
//!   reaches a group command;
//! - the commands kept are the group's own and those whose possible successor node is kept: a
//!   step into a node outside the set starts a run that never violates, so dropping it removes
//!   only states that cannot matter, and every step of a violating run is kept (each state on
//!   it still has its violation ahead);
//! - the variables kept are the cone of influence of what is kept: read by a group condition or
//!   a kept guard, or by a kept update of a kept variable (plus `node`, `step` and `turn`). A
//!   dropped variable is never read by anything kept, so the kept variables evolve in the slice
//!   exactly as in the whole system under the same commands and choices.
//!
//! Hence a run of the slice is the projection of a run of the whole system with the same
//! commands and choices ([`Slice::lift`] rebuilds it and checks it), and a shortest violating run
//! of the whole system projects to one of the slice: verdicts and shortest depths are equal.

use super::flow::command_targets;
use super::{CmdId, Command, Obligation, TransitionSystem, VarId};
use indexmap::IndexMap;

/// What a slice keeps of its system, both lists ascending. Two obligations with equal `Kept`
/// search the same system, so they search it together.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Kept {
    /// The commands, by their id in the whole system.
    pub commands: Vec<CmdId>,
    /// The state variables, by their id in the whole system.
    pub vars: Vec<VarId>,
}

/// A sliced system with its obligations and the way back to the whole system.
#[derive(Clone, Debug)]
pub struct Slice {
    /// The sliced system: the kept variables renumbered in their order, every choice as it was
    /// (so a witness's choice vector reads the same in both), the kept commands in their order.
    pub ts: TransitionSystem,
    /// The group's obligations over the sliced system (commands and conditions renumbered).
    pub obligations: Vec<Obligation>,
    /// Per sliced command, its id in the whole system.
    pub commands: Vec<CmdId>,
    /// Per sliced variable, its id in the whole system.
    pub vars: Vec<VarId>,
}

/// One search: the positions of its obligations (in the order given to [`groups`]) and the
/// slice it runs on, `None` for the whole system.
#[derive(Clone, Debug)]
pub struct Group {
    /// Indices into the obligations given to [`groups`], ascending.
    pub members: Vec<usize>,
    /// The slice searched, or `None` when the search is over the whole system.
    pub slice: Option<Slice>,
}

/// Why a slice's run could not be rebuilt in the whole system. Each one is a slicing bug: by
/// construction every run of a slice is a run of the whole system.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LiftError {
    /// A step's command is not a command of the slice.
    #[error("step {step}: command {cmd} is not a command of the slice")]
    NoSuchCommand {
        /// The step (from 0).
        step: usize,
        /// The sliced command id.
        cmd: u32,
    },
    /// A step's guard is false in the whole system's state.
    #[error("step {step}: command {cmd} at node {node} is not enabled in the whole system")]
    NotEnabled {
        /// The step (from 0).
        step: usize,
        /// The whole system's command id.
        cmd: u32,
        /// The command's node.
        node: String,
    },
    /// A kept variable has a different value in the whole system than in the slice.
    #[error("step {step}: variable {var} is {full} in the whole system but {sliced} in the slice")]
    Diverged {
        /// The step (from 0).
        step: usize,
        /// The variable.
        var: String,
        /// Its value in the whole system.
        full: u32,
        /// Its value in the slice.
        sliced: u32,
    },
    /// The last step does not violate the obligation in the whole system.
    #[error("the last step does not violate {obligation} in the whole system")]
    NoViolation {
        /// The obligation's id.
        obligation: ir::vocab::ObligationId,
    },
}

/// What slicing reads of a system, computed once for all its groups.
pub struct Slicer<'a> {
    ts: &'a TransitionSystem,
    /// Per command, the node values it can lead to (`None`: any).
    targets: Vec<Option<Vec<u32>>>,
    /// Per node value, the commands that can lead to it (those with `None` targets excluded).
    into: Vec<Vec<CmdId>>,
    /// The commands whose target node cannot be told (they can lead anywhere).
    anywhere: Vec<CmdId>,
    /// Per variable, the commands updating it and what that update reads.
    writers: Vec<Vec<(CmdId, Vec<VarId>)>>,
    /// Per command, what its guard reads.
    guard_reads: Vec<Vec<VarId>>,
}

impl<'a> Slicer<'a> {
    /// Indexes a system for slicing.
    pub fn new(ts: &'a TransitionSystem) -> Slicer<'a> {
        let nodes = ts.vars[ts.node_var.0 as usize].domain as usize;
        let targets = command_targets(ts);
        let mut into = vec![vec![]; nodes];
        let mut anywhere = vec![];
        for (i, t) in targets.iter().enumerate() {
            match t {
                Some(t) => t
                    .iter()
                    .filter(|m| (**m as usize) < nodes)
                    .for_each(|m| into[*m as usize].push(CmdId(i as u32))),
                None => anywhere.push(CmdId(i as u32)),
            }
        }
        let mut writers = vec![vec![]; ts.vars.len()];
        let mut guard_reads = Vec::with_capacity(ts.commands.len());
        for (i, c) in ts.commands.iter().enumerate() {
            for (v, e) in &c.updates {
                let mut r = vec![];
                e.vars_read(&mut r);
                writers[v.0 as usize].push((CmdId(i as u32), r));
            }
            let mut r = vec![];
            c.guard.vars_read(&mut r);
            guard_reads.push(r);
        }
        Slicer {
            ts,
            targets,
            into,
            anywhere,
            writers,
            guard_reads,
        }
    }

    /// The nodes from which one of `goals` (commands) can be reached over the node graph,
    /// backward from the goals' own nodes.
    fn nodes_reaching(&self, goals: &[CmdId]) -> Vec<bool> {
        let ts = self.ts;
        let mut reach = vec![false; self.into.len()];
        let mut work: Vec<u32> = goals.iter().map(|c| ts.command(*c).node).collect();
        let mut any_reached = false;
        while let Some(n) = work.pop() {
            let Some(slot) = reach.get_mut(n as usize) else {
                continue;
            };
            if *slot {
                continue;
            }
            *slot = true;
            work.extend(self.into[n as usize].iter().map(|c| ts.command(*c).node));
            if !any_reached {
                // A command that can lead anywhere leads into the set as soon as it is not empty.
                any_reached = true;
                work.extend(self.anywhere.iter().map(|c| ts.command(*c).node));
            }
        }
        reach
    }

    /// What a search for `obligations` needs of the system (see the module's comment for why
    /// each part keeps everything that can lead to a violation).
    pub fn kept(&self, obligations: &[&Obligation]) -> Kept {
        let ts = self.ts;
        let goals: Vec<CmdId> = obligations
            .iter()
            .flat_map(|o| o.commands.iter().copied())
            .collect();
        let reach = self.nodes_reaching(&goals);
        let mut keep_cmd = vec![false; ts.commands.len()];
        goals.iter().for_each(|c| keep_cmd[c.0 as usize] = true);
        for (i, t) in self.targets.iter().enumerate() {
            let leads_in = match t {
                Some(t) => t
                    .iter()
                    .any(|m| reach.get(*m as usize).copied().unwrap_or(false)),
                None => reach.iter().any(|r| *r),
            };
            keep_cmd[i] |= leads_in;
        }
        let mut seeds = vec![ts.node_var, ts.turn_var, ts.step_var];
        for o in obligations {
            o.conds.iter().for_each(|e| e.vars_read(&mut seeds));
        }
        for (i, k) in keep_cmd.iter().enumerate() {
            if *k {
                seeds.extend(self.guard_reads[i].iter().copied());
            }
        }
        let keep_var = self.cone(seeds, &keep_cmd);
        Kept {
            commands: (0..ts.commands.len())
                .filter(|i| keep_cmd[*i])
                .map(|i| CmdId(i as u32))
                .collect(),
            vars: (0..ts.vars.len())
                .filter(|i| keep_var[*i])
                .map(|i| VarId(i as u32))
                .collect(),
        }
    }

    /// The variables in the cone of influence of `seeds`: the seeds, and whatever a kept
    /// command's update of a variable in the cone reads.
    pub(super) fn cone(&self, seeds: Vec<VarId>, keep_cmd: &[bool]) -> Vec<bool> {
        let mut keep = vec![false; self.ts.vars.len()];
        let mut work = seeds;
        while let Some(v) = work.pop() {
            if std::mem::replace(&mut keep[v.0 as usize], true) {
                continue;
            }
            for (c, reads) in &self.writers[v.0 as usize] {
                if keep_cmd[c.0 as usize] {
                    work.extend(reads.iter().copied());
                }
            }
        }
        keep
    }

    /// The system restricted to `kept`, with `obligations` renumbered to it (every command of
    /// theirs must be kept, as [`Slicer::kept`] makes sure).
    pub fn slice(&self, kept: &Kept, obligations: &[&Obligation]) -> Slice {
        let ts = self.ts;
        let mut keep_var = vec![false; ts.vars.len()];
        kept.vars.iter().for_each(|v| keep_var[v.0 as usize] = true);
        let mut keep_cmd = vec![false; ts.commands.len()];
        kept.commands
            .iter()
            .for_each(|c| keep_cmd[c.0 as usize] = true);
        let (sliced, obligations) = restrict(ts, &keep_var, &keep_cmd, obligations);
        Slice {
            ts: sliced,
            obligations,
            commands: kept.commands.clone(),
            vars: kept.vars.clone(),
        }
    }
}

/// Whether a slice is worth a search of its own: it drops at least one variable or one
/// command. A slice that keeps everything is the whole system, searched once for all such
/// obligations.
pub fn drops_something(ts: &TransitionSystem, kept: &Kept) -> bool {
    kept.vars.len() < ts.vars.len() || kept.commands.len() < ts.commands.len()
}

/// The searches for `obligations`: obligations whose slices are equal (same commands, same
/// variables) search together, and those whose slice drops nothing ([`drops_something`]) share
/// one search of the whole system. Groups come in the order of their first member.
pub fn groups(ts: &TransitionSystem, obligations: &[Obligation]) -> Vec<Group> {
    let slicer = Slicer::new(ts);
    let mut by_kept: IndexMap<Option<Kept>, Vec<usize>> = IndexMap::new();
    for (i, o) in obligations.iter().enumerate() {
        let kept = slicer.kept(&[o]);
        let key = drops_something(ts, &kept).then_some(kept);
        by_kept.entry(key).or_default().push(i);
    }
    by_kept
        .into_iter()
        .map(|(kept, members)| {
            let slice = kept.map(|k| {
                let group: Vec<&Obligation> = members.iter().map(|i| &obligations[*i]).collect();
                slicer.slice(&k, &group)
            });
            Group { members, slice }
        })
        .collect()
}

impl Slice {
    /// Rebuilds a run of the slice (its steps as sliced commands and choice vectors) in the
    /// whole system `full`, from its initial state, and checks that it is one: every guard
    /// holds, every kept variable has the slice's value at every step (`sliced_states`, the
    /// slice's pre-states, when given), and the last step violates `obligation` (the whole
    /// system's). Returns per step the whole system's pre-state and command.
    pub fn lift(
        &self,
        full: &TransitionSystem,
        steps: &[(CmdId, &[u32])],
        sliced_states: Option<&[&[u32]]>,
        obligation: &Obligation,
    ) -> Result<Vec<(Vec<u32>, CmdId)>, LiftError> {
        let mut state = full.init.clone();
        let mut out = Vec::with_capacity(steps.len());
        for (step, (cmd, choices)) in steps.iter().enumerate() {
            if let Some(s) = sliced_states.and_then(|s| s.get(step)) {
                for (i, v) in self.vars.iter().enumerate() {
                    let (f, sl) = (state[v.0 as usize], s.get(i).copied().unwrap_or(u32::MAX));
                    if f != sl {
                        return Err(LiftError::Diverged {
                            step,
                            var: full.vars[v.0 as usize].name.clone(),
                            full: f,
                            sliced: sl,
                        });
                    }
                }
            }
            let id = *self
                .commands
                .get(cmd.0 as usize)
                .ok_or(LiftError::NoSuchCommand { step, cmd: cmd.0 })?;
            let c = full.command(id);
            if !full.eval_bool(&c.guard, &state, choices) {
                return Err(LiftError::NotEnabled {
                    step,
                    cmd: id.0,
                    node: c.label.node.clone(),
                });
            }
            let next = full.apply(c, &state, choices);
            out.push((std::mem::replace(&mut state, next), id));
        }
        let violates = match (out.last(), steps.last()) {
            (Some((pre, id)), Some((_, choices))) => obligation
                .commands
                .iter()
                .zip(&obligation.conds)
                .any(|(c, cond)| c == id && full.eval_bool(cond, pre, choices)),
            _ => false,
        };
        if !violates {
            return Err(LiftError::NoViolation {
                obligation: obligation.id.clone(),
            });
        }
        Ok(out)
    }
}

/// The system with only the variables and commands marked kept, variables and commands
/// renumbered in their order, choices unchanged, and `obligations` renumbered to it (their
/// commands must be kept). Updates of dropped variables are dropped; a kept expression must
/// read only kept variables (the callers keep a cone of influence).
pub(super) fn restrict(
    ts: &TransitionSystem,
    keep_var: &[bool],
    keep_cmd: &[bool],
    obligations: &[&Obligation],
) -> (TransitionSystem, Vec<Obligation>) {
    let mut map: Vec<Option<VarId>> = vec![None; ts.vars.len()];
    let mut next = 0u32;
    for (i, k) in keep_var.iter().enumerate() {
        if *k {
            map[i] = Some(VarId(next));
            next += 1;
        }
    }
    let id = |v: VarId| map[v.0 as usize].unwrap_or(v);
    let mut cmd_map: Vec<Option<CmdId>> = vec![None; ts.commands.len()];
    let mut commands = vec![];
    for (i, c) in ts.commands.iter().enumerate() {
        if !keep_cmd[i] {
            continue;
        }
        cmd_map[i] = Some(CmdId(commands.len() as u32));
        commands.push(Command {
            node: c.node,
            guard: c.guard.remap(&map),
            updates: c
                .updates
                .iter()
                .filter(|(v, _)| keep_var[v.0 as usize])
                .map(|(v, e)| (id(*v), e.remap(&map)))
                .collect(),
            choices: c.choices.clone(),
            label: c.label.clone(),
        });
    }
    let by_node = ts
        .by_node
        .iter()
        .map(|cs| cs.iter().filter_map(|c| cmd_map[c.0 as usize]).collect())
        .collect();
    let kept = |xs: &[u32]| -> Vec<u32> {
        xs.iter()
            .zip(keep_var)
            .filter(|(_, k)| **k)
            .map(|(v, _)| *v)
            .collect()
    };
    let sliced = TransitionSystem {
        vars: ts
            .vars
            .iter()
            .zip(keep_var)
            .filter(|(_, k)| **k)
            .map(|(d, _)| d.clone())
            .collect(),
        choices: ts.choices.clone(),
        init: kept(&ts.init),
        commands,
        by_node,
        node_var: id(ts.node_var),
        turn_var: id(ts.turn_var),
        step_var: id(ts.step_var),
        depth: ts.depth,
        implied: ts
            .implied
            .iter()
            .filter(|(a, b)| keep_var[a.0 as usize] && keep_var[b.0 as usize])
            .map(|(a, b)| (id(*a), id(*b)))
            .collect(),
    };
    let obls = obligations
        .iter()
        .map(|o| Obligation {
            commands: o
                .commands
                .iter()
                .map(|c| cmd_map[c.0 as usize].unwrap_or(*c))
                .collect(),
            conds: o.conds.iter().map(|e| e.remap(&map)).collect(),
            ..(*o).clone()
        })
        .collect();
    (sliced, obls)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ts::ex::{and, var_is};
    use crate::ts::tiny::decl;
    use crate::ts::{ChoiceId, Expr, Label, LabelKind};
    use ir::vocab::{ObligationId, RuleId};

    /// Whether an expression reads only kept variables.
    fn reads_only(e: &Expr, keep: &[VarId]) -> bool {
        let mut r = vec![];
        e.vars_read(&mut r);
        r.iter().all(|v| keep.contains(v))
    }

    /// Variables: 0 node (4 values: start 0, goal 1, dead end 2, done 3), 1 step, 2 turn,
    /// 3 `x` (read only at the dead end), 4 `y` (read by the guard into the goal), 5 `z` (read at
    /// the goal, written from `w`), 6 `w`. One choice `c` read at the goal.
    fn tiny() -> (TransitionSystem, Vec<Obligation>) {
        let var = |i: u32| VarId(i);
        let cmd = |node: u32, guard: Vec<Expr>, updates: Vec<(VarId, Expr)>, choices| Command {
            node,
            guard: and([vec![var_is(var(0), node)], guard].concat()),
            updates,
            choices,
            label: Label::new(LabelKind::Route, &format!("n{node}"), None, None),
        };
        let commands = vec![
            // 0: start -> goal when y, copying w into z.
            cmd(
                0,
                vec![var_is(var(4), 1)],
                vec![(var(0), Expr::Const(1)), (var(5), Expr::Var(var(6)))],
                vec![],
            ),
            // 1: start -> dead end.
            cmd(0, vec![], vec![(var(0), Expr::Const(2))], vec![]),
            // 2: the dead end loops while x, counting x up.
            cmd(
                2,
                vec![var_is(var(3), 0)],
                vec![(var(3), Expr::Const(1))],
                vec![],
            ),
            // 3: the goal's bad step, then done.
            cmd(1, vec![], vec![(var(0), Expr::Const(3))], vec![ChoiceId(0)]),
        ];
        let mut by_node = vec![vec![]; 4];
        for (i, c) in commands.iter().enumerate() {
            by_node[c.node as usize].push(CmdId(i as u32));
        }
        let ts = TransitionSystem {
            vars: vec![
                decl("node", 4),
                decl("step", 3),
                decl("turn", 1),
                decl("x", 2),
                decl("y", 2),
                decl("z", 2),
                decl("w", 2),
            ],
            choices: vec![decl("c", 2)],
            init: vec![0, 0, 0, 0, 1, 0, 1],
            commands,
            by_node,
            node_var: var(0),
            turn_var: var(2),
            step_var: var(1),
            depth: 3,
            implied: vec![],
        };
        let bad = Obligation {
            id: ObligationId::new(RuleId::QG001, "goal"),
            rule: ir::vocab::RuleId::QG001,
            subject: "goal".into(),
            commands: vec![CmdId(3)],
            conds: vec![and(vec![
                var_is(var(5), 1),
                crate::ts::ex::choice_is(ChoiceId(0), 1),
            ])],
            inverted: false,
        };
        // Violated at the dead end: its slice is the whole system.
        let loop_obl = Obligation {
            id: ObligationId::new(RuleId::QG001, "loop"),
            subject: "loop".into(),
            commands: vec![CmdId(2)],
            conds: vec![Expr::Bool(true)],
            ..bad.clone()
        };
        (ts, vec![bad, loop_obl])
    }

    #[test]
    fn a_command_into_a_dead_end_is_dropped() {
        let (ts, obls) = tiny();
        let kept = Slicer::new(&ts).kept(&[&obls[0]]);
        // Command 1 goes to the dead end (from which the goal cannot be reached), command 2
        // runs there: both dropped. The start's step to the goal and the goal's own step stay.
        assert_eq!(kept.commands, vec![CmdId(0), CmdId(3)]);
    }

    #[test]
    fn a_variable_only_a_dropped_branch_reads_is_removed_and_guard_reads_kept() {
        let (ts, obls) = tiny();
        let kept = Slicer::new(&ts).kept(&[&obls[0]]);
        // x is read only at the dead end: removed. y is a kept guard's, z the condition's, and
        // w flows into z through a kept update: all kept, as are node, step and turn.
        let names: Vec<&str> = kept
            .vars
            .iter()
            .map(|v| ts.vars[v.0 as usize].name.as_str())
            .collect();
        assert_eq!(names, vec!["node", "step", "turn", "y", "z", "w"]);
        let s = Slicer::new(&ts).slice(&kept, &[&obls[0]]);
        assert_eq!(s.ts.vars.len(), 6);
        assert_eq!(s.ts.init, vec![0, 0, 0, 1, 0, 1]);
        // Renumbered: the obligation's command is the slice's second, its condition reads z as
        // the slice's variable 4, and every kept expression reads only kept variables.
        assert_eq!(s.obligations[0].commands, vec![CmdId(1)]);
        assert_eq!(s.commands, vec![CmdId(0), CmdId(3)]);
        assert_eq!(
            s.ts.by_node,
            vec![vec![CmdId(0)], vec![CmdId(1)], vec![], vec![]]
        );
        let all: Vec<VarId> = (0..6).map(VarId).collect();
        assert!(reads_only(&s.obligations[0].conds[0], &all));
        assert!(s.ts.commands.iter().all(|c| reads_only(&c.guard, &all)
            && c.updates
                .iter()
                .all(|(v, e)| v.0 < 6 && reads_only(e, &all))));
        assert_eq!(s.ts.check_well_formed(&s.obligations), Ok(()));
    }

    #[test]
    fn equal_slices_search_together_and_a_whole_slice_searches_the_whole_system() {
        let (ts, mut obls) = tiny();
        // Another condition on the goal's step reading the same variable: the same slice.
        let twin = Obligation {
            id: ObligationId::new(RuleId::QG001, "goal2"),
            conds: vec![var_is(VarId(5), 0)],
            ..obls[0].clone()
        };
        // Violated at the dead end or at the goal: every node and every variable is needed.
        let either = Obligation {
            id: ObligationId::new(RuleId::QG001, "either"),
            commands: vec![CmdId(2), CmdId(3)],
            conds: vec![Expr::Bool(true), var_is(VarId(5), 1)],
            ..obls[0].clone()
        };
        obls.push(twin);
        obls.push(either);
        let slicer = Slicer::new(&ts);
        assert!(!drops_something(&ts, &slicer.kept(&[&obls[3]])));
        assert!(drops_something(&ts, &slicer.kept(&[&obls[1]])));
        let gs = groups(&ts, &obls);
        let members: Vec<(Vec<usize>, bool)> = gs
            .iter()
            .map(|g| (g.members.clone(), g.slice.is_some()))
            .collect();
        assert_eq!(
            members,
            vec![(vec![0, 2], true), (vec![1], true), (vec![3], false)]
        );
        // The merged group's obligations are renumbered together, in member order.
        let merged = gs[0].slice.as_ref().unwrap();
        let ids: Vec<&str> = merged.obligations.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(ids, vec!["QG001:goal", "QG001:goal2"]);
    }

    #[test]
    fn a_run_of_the_slice_lifts_to_the_whole_system_and_a_wrong_one_is_an_error() {
        let (ts, obls) = tiny();
        let slicer = Slicer::new(&ts);
        let s = slicer.slice(&slicer.kept(&[&obls[0]]), &[&obls[0]]);
        let yes = [1u32];
        let no = [0u32];
        let lifted = s
            .lift(&ts, &[(CmdId(0), &no), (CmdId(1), &yes)], None, &obls[0])
            .expect("a run of the slice");
        assert_eq!(lifted[1], (vec![1, 0, 0, 0, 1, 1, 1], CmdId(3)));
        // The same run with the choice that does not violate.
        let e = s.lift(&ts, &[(CmdId(0), &no), (CmdId(1), &no)], None, &obls[0]);
        assert!(matches!(e, Err(LiftError::NoViolation { .. })));
        // A step that is not enabled (the goal's step from the start).
        let e = s.lift(&ts, &[(CmdId(1), &yes)], None, &obls[0]);
        assert!(matches!(e, Err(LiftError::NotEnabled { step: 0, .. })));
        // A slice state that does not match the whole system's.
        let wrong: [&[u32]; 1] = [&[0, 0, 0, 0, 0, 1]];
        let e = s.lift(&ts, &[(CmdId(0), &no)], Some(&wrong), &obls[0]);
        assert!(matches!(e, Err(LiftError::Diverged { step: 0, .. })));
    }
}
