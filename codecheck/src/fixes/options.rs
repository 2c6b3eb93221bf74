//! QC105's edit: a `--` element put before the first element of a command's list that a value
//! can begin, so the program reads it (and every element after it) as an operand. Offered only
//! where that changes nothing but how a value starting with `-` is read: the program is a
//! constant and reads its own options (not a wrapper or an interpreter, whose later elements
//! belong to what they run); the element before is no option name (`--month` then `month`: the
//! value is that option's, and a `--` there would become it; `--color=never` is a whole option); no constant option follows (it
//! would become an operand); no `--` is there already. Python lists and JavaScript/TypeScript
//! arrays (`subprocess.run([...])`, `execFile(prog, [...])`, spawn-rx, execa); not Go's
//! variadic `exec.Command`, whose elements are the call's own arguments.

use super::{insert_at, Fixer, Found};
use crate::argv::{plain_program, program_base};
use crate::effects::{Action, FileCtx};
use crate::lang::{all_children, children};
use ir::code::Language;
use tree_sitter::Node;

/// What an element of a command's list is, as written.
enum Element {
    /// A constant string: its text.
    Constant(String),
    /// A value whose first character no constant fixes.
    Open,
    /// A value glued after constant text that fixes its first character (`f"--month={m}"`).
    Fixed,
}

impl<'t> Fixer<'t> {
    /// QC105 at `byte`: the process call there, its list given a `--` before its first open
    /// element (the module's conditions).
    pub(super) fn end_options(&self, cx: &FileCtx, byte: usize) -> Found {
        let c = cx.unit.calls.iter().find(|c| c.at.byte == byte)?;
        if !matches!(cx.action(c), Some(Action::Process { shell: false, .. })) {
            return None;
        }
        let call = self
            .starting_at(byte, &["call", "call_expression"])
            .into_iter()
            .next()?;
        let args: Vec<Node> = self
            .args(call)
            .into_iter()
            .filter(|a| a.is_named() && a.kind() != "keyword_argument")
            .collect();
        let (program, list) = match self.lang {
            Language::Python => {
                let list = args.first().filter(|l| l.kind() == "list")?;
                let items = self.items(*list);
                (*items.first()?, items[1..].to_vec())
            }
            Language::JavaScript | Language::TypeScript => {
                let list = args.get(1).filter(|l| l.kind() == "array")?;
                (*args.first()?, self.items(*list))
            }
            _ => return None,
        };
        let Element::Constant(prog) = self.element(program) else {
            return None;
        };
        if !plain_program(&program_base(&prog)) {
            return None;
        }
        let kinds: Vec<Element> = list.iter().map(|n| self.element(*n)).collect();
        let i = kinds.iter().position(|k| matches!(k, Element::Open))?;
        let constant =
            |k: &Element, p: &dyn Fn(&str) -> bool| matches!(k, Element::Constant(t) if p(t));
        let option_before =
            i > 0 && constant(&kinds[i - 1], &|t| t.starts_with('-') && !t.contains('='));
        let ended = kinds[..i].iter().any(|k| constant(k, &|t| t == "--"));
        let option_after = kinds[i + 1..]
            .iter()
            .any(|k| constant(k, &|t| t.starts_with('-')));
        if option_before || ended || option_after {
            return None;
        }
        let quote = self.of(program).chars().find(|&q| q == '"' || q == '\'')?;
        let at = list[i].start_byte();
        Some((
            vec![insert_at(at, &format!("{quote}--{quote}, "))],
            format!(
                "a `--` element put before `{}`, so `{prog}` reads it as an operand",
                self.of(list[i])
            ),
        ))
    }

    /// A list's or an array's elements, comments aside.
    fn items(&self, list: Node<'t>) -> Vec<Node<'t>> {
        children(list)
            .into_iter()
            .filter(|n| n.is_named() && n.kind() != "comment")
            .collect()
    }

    /// What an element is: a plain string literal is a constant; a string with values put in
    /// (an f-string, a template) fixes its first character when constant text other than
    /// dashes comes before the first value; anything else is open.
    fn element(&self, n: Node<'t>) -> Element {
        if !matches!(n.kind(), "string" | "template_string") {
            return Element::Open;
        }
        let mut text = String::new();
        for part in all_children(n) {
            match part.kind() {
                "interpolation" | "template_substitution" => {
                    return if text.is_empty() || text.chars().all(|c| c == '-') {
                        Element::Open
                    } else {
                        Element::Fixed
                    };
                }
                "string_content" | "string_fragment" => text.push_str(self.of(part)),
                "escape_sequence" => return Element::Open,
                _ => {}
            }
        }
        Element::Constant(text)
    }
}
