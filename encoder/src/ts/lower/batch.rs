//! SPEC §3 Batches (parallel tool calls), lowered as a child of `lower`: at a tools node marked
//! `batch`, every call — a refusal with its rollback, an allowed run, an unchecked run — also
//! has a variant that keeps the run at the node for the batch's next call instead of taking an
//! edge. That variant counts no step and no model step (the batch's last call, which takes the
//! edge or ends the turn, counts the one step), and its check, effects and obligations are
//! those of the same call made alone, on the state as it stands — so each call of a batch sees
//! the earlier allowed calls as returned, a refusal rolls back and the batch goes on, and a
//! confirm (which ends the turn) has no such variant. Repeats are allowed and the number of
//! calls is not bounded; the state space stays finite because every count saturates.
//!
//! A batch may start wherever the run arrives free (not by the router's typed tool step, not
//! with a held call's token) after the turn's first step: the model's call edge, which SPEC
//! names, and also a human's approval or a custom node's route into the node, which
//! over-approximates (LangGraph's ToolNode runs every call of the model's last message
//! whichever node led to it; docs/decisions.md).

use super::*;

impl B<'_> {
    /// Whether node `i` runs a batch of calls per step.
    pub(super) fn is_batch_node(&self, i: usize) -> bool {
        self.p.graph.nodes[i].is_batch()
    }

    /// The variant of a call at a batch node that stays for the batch's next call: the call's
    /// guard, updates and choices, with no edge, no step counted and no turn end. Only for a
    /// call that arrives free, past the turn's first step; never for a run by a held call's
    /// token (a confirm-yes is that call alone) or a step that ends the turn.
    pub(super) fn batch_goes_on(
        &mut self,
        i: usize,
        guard: &Expr,
        upd: &IndexMap<VarId, Expr>,
        choices: &[ChoiceId],
        label: &Label,
    ) {
        let call = matches!(label.kind, LabelKind::Execution | LabelKind::Decision);
        if !self.is_batch_node(i) || !call || label.ends_turn || label.by_token {
            return;
        }
        let step = self.sv.step.unwrap_or(VarId(0));
        let mut g = vec![guard.clone(), self.via_is(VIA_FREE)];
        g.push(not(var_is(step, 0)));
        let mut upd = upd.clone();
        if let Some(via) = self.sv.via {
            upd.insert(via, Expr::Const(VIA_FREE));
        }
        let mut l = label.clone();
        l.batch = true;
        l.to = Some(self.p.graph.nodes[i].id.clone());
        self.push_command(i, and(g), upd, choices.to_vec(), l);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ir::agent::Privilege;
    use ir::catalogue::Effect;
    use ir::testkit::Builder;

    /// A model calling a batch tools node with one read and one write, budget 1.
    fn shop(batch: bool) -> Project {
        let b = Builder::new()
            .agent("desk", Privilege::Low, Some(1))
            .tool(Builder::mk_tool("get_order", Effect::Read))
            .tool(Builder::mk_tool("refund", Effect::Write))
            .node("model", NodeKind::Model, Some("desk"), None, &[])
            .node(
                "tools",
                NodeKind::Tools,
                Some("desk"),
                Some(true),
                &["get_order", "refund"],
            );
        let b = if batch { b.batch() } else { b };
        b.node("end", NodeKind::End, None, None, &[])
            .edge("model", "tools", EdgeKind::Call)
            .edge("tools", "model", EdgeKind::Return)
            .edge("model", "end", EdgeKind::Reply)
            .entry("model")
            .build()
    }

    #[test]
    fn only_a_batch_node_has_calls_that_stay() {
        let plain = lower(&shop(false), 1, 4);
        assert!(!plain.ts.has_batches());
        let l = lower(&shop(true), 1, 4);
        assert!(l.ts.has_batches());
        let step = l.sv.step.expect("step");
        for c in l.ts.commands.iter().filter(|c| c.label.batch) {
            assert_eq!(c.label.node, "tools");
            assert!(!c.label.ends_turn && !c.label.by_token && c.label.edge.is_none());
            assert!(matches!(
                c.label.kind,
                LabelKind::Execution | LabelKind::Decision
            ));
            // No step is counted and the run stays at the node.
            assert!(c
                .updates
                .iter()
                .all(|(v, _)| *v != step && Some(*v) != l.sv.node));
        }
        // The calls that stay are the node's calls that take an edge, one for one, less the
        // confirm (it ends the turn) and the run by token.
        let staying = l.ts.commands.iter().filter(|c| c.label.batch).count();
        let edged =
            l.ts.commands
                .iter()
                .filter(|c| {
                    c.label.node == "tools"
                        && !c.label.batch
                        && !c.label.by_token
                        && c.label.decision != Some(Answer::Confirm)
                        && matches!(c.label.kind, LabelKind::Execution | LabelKind::Decision)
                })
                .count();
        assert_eq!(staying, edged);
    }

    #[test]
    fn a_plain_graph_lowers_as_before() {
        // Lowering a graph without batch nodes is untouched by batches: same commands.
        let a = lower(&shop(false), 2, 5);
        let mut p = shop(false);
        p.graph.nodes[1].batch = Some(false);
        let b = lower(&p, 2, 5);
        assert_eq!(a.ts, b.ts);
    }
}
