//! Python's syntax tree (tree-sitter-python) walked into a [`Unit`]: calls with keyword
//! arguments, assignments (`with … as`, `:=` included), dict entries and keyword arguments as
//! pairs, string literals (docstrings marked as prose), functions with their decorators, and
//! tool registrations (`@tool`, `@function_tool`, `@mcp.tool()`, `@agent.tool`,
//! `FunctionTool(fn)`, `StructuredTool.from_function(fn)` …). Imports are resolved, so
//! `from subprocess import run` makes `run(…)` the call `subprocess.run`.

use super::{all_children, children, descend, each_node, sides, Frame, Src, Walker};
use crate::model::{Assign, Call, Function, Literal, Pair, Registration, Unit, Val};
use tree_sitter::Node;

/// Decorators and registration functions that make a function a tool, by their last segment.
const TOOL_DECORATORS: &[&str] = &[
    "tool",
    "function_tool",
    "tool_plain",
    "kernel_function",
    "ai_function",
];
/// Calls that register a function given as an argument, by their last segment.
const TOOL_WRAPPERS: &[&str] = &[
    "FunctionTool",
    "from_defaults",
    "from_function",
    "StructuredTool",
    "Tool",
    "add_tool",
    "tool",
    "function_tool",
];

struct Walk<'t> {
    frame: Frame<'t>,
}

pub(super) fn walk(src: &Src, root: Node) -> Unit {
    let mut w = Walk {
        frame: Frame::new(src),
    };
    each_node(root, &mut |n| w.import(n));
    descend(&mut w, root);
    w.frame.unit
}

frame_deref!(Walk);

impl<'t> Walk<'t> {
    /// `import a.b as c`, `from a import b as c`: the aliases callees are resolved through.
    fn import(&mut self, n: Node) {
        match n.kind() {
            "import_statement" => {
                for c in children(n) {
                    if c.kind() == "aliased_import" {
                        if let (Some(name), Some(alias)) = (
                            c.child_by_field_name("name"),
                            c.child_by_field_name("alias"),
                        ) {
                            self.frame
                                .aliases
                                .insert(self.text(alias).into(), self.text(name).into());
                        }
                    }
                }
            }
            "import_from_statement" => {
                let Some(module) = n.child_by_field_name("module_name") else {
                    return;
                };
                let module = self.text(module).to_string();
                let mut cur = n.walk();
                for c in n.children_by_field_name("name", &mut cur) {
                    let (name, alias) = match c.kind() {
                        "aliased_import" => (
                            c.child_by_field_name("name").map(|x| self.text(x)),
                            c.child_by_field_name("alias").map(|x| self.text(x)),
                        ),
                        _ => (Some(self.text(c)), Some(self.text(c))),
                    };
                    if let (Some(name), Some(alias)) = (name, alias) {
                        self.frame
                            .aliases
                            .insert(alias.to_string(), format!("{module}.{name}"));
                    }
                }
            }
            _ => {}
        }
    }

    /// A name or attribute path, if the node is one.
    fn path(&self, n: Node) -> Option<String> {
        match n.kind() {
            "identifier" => Some(self.text(n).to_string()),
            "attribute" => {
                let o = self.path(n.child_by_field_name("object")?)?;
                let a = self.text(n.child_by_field_name("attribute")?);
                Some(format!("{o}.{a}"))
            }
            _ => None,
        }
    }

    /// Every name or attribute path read below a node.
    fn paths_in(&self, n: Node) -> Vec<String> {
        if let Some(p) = self.path(n) {
            return vec![p];
        }
        if n.kind() == "keyword_argument" {
            return n
                .child_by_field_name("value")
                .map(|v| self.paths_in(v))
                .unwrap_or_default();
        }
        children(n)
            .into_iter()
            .flat_map(|c| self.paths_in(c))
            .collect()
    }

    /// A string literal's constant content and the names its interpolations read.
    fn string(&self, n: Node) -> Val {
        let mut text = String::new();
        let mut all = String::new();
        let mut names = Vec::new();
        let mut built = false;
        for c in children(n) {
            if matches!(c.kind(), "string_content" | "escape_sequence") {
                all.push_str(self.text(c));
            }
            match c.kind() {
                "string_content" | "escape_sequence" if !built => text.push_str(self.text(c)),
                "interpolation" => {
                    built = true;
                    names.extend(self.paths_in(c));
                }
                _ => {}
            }
        }
        if built {
            Val::Built {
                prefix: text,
                names,
                text: all,
            }
        } else {
            Val::Str(text)
        }
    }

    /// An expression summarised.
    fn val(&self, n: Node) -> Val {
        match n.kind() {
            "string" => self.string(n),
            "concatenated_string" => {
                let parts: Vec<Val> = children(n).into_iter().map(|c| self.string(c)).collect();
                concat(parts)
            }
            "true" => Val::Bool(true),
            "false" => Val::Bool(false),
            "none" => Val::Null,
            "integer" | "float" => Val::Num,
            "identifier" | "attribute" => match self.path(n) {
                Some(p) => Val::Path(p),
                None => Val::Other(self.paths_in(n)),
            },
            "call" => self
                .call(n)
                .map(|c| Val::Call(Box::new(c)))
                .unwrap_or_else(|| Val::Other(self.paths_in(n))),
            "await" | "parenthesized_expression" => children(n)
                .first()
                .map(|c| self.val(*c))
                .unwrap_or(Val::Other(vec![])),
            "binary_operator" => {
                let (Some(l), Some(r)) = (
                    n.child_by_field_name("left"),
                    n.child_by_field_name("right"),
                ) else {
                    return Val::Other(self.paths_in(n));
                };
                let op = n
                    .child_by_field_name("operator")
                    .map(|o| self.text(o))
                    .unwrap_or("");
                match op {
                    "+" => concat(vec![self.val(l), self.val(r)]),
                    "%" => match self.val(l) {
                        Val::Str(s) | Val::Built { prefix: s, .. } => Val::Built {
                            prefix: s.split('%').next().unwrap_or("").to_string(),
                            names: self.paths_in(r),
                            text: s.clone(),
                        },
                        _ => Val::Other(self.paths_in(n)),
                    },
                    _ => Val::Other(self.paths_in(n)),
                }
            }
            "dictionary" => Val::Object(
                children(n)
                    .into_iter()
                    .filter(|c| c.kind() == "pair")
                    .filter_map(|p| {
                        let k = p.child_by_field_name("key")?;
                        let v = p.child_by_field_name("value")?;
                        let key = match self.val(k) {
                            Val::Str(s) => s,
                            _ => return None,
                        };
                        Some((key, self.val(v)))
                    })
                    .collect(),
            ),
            "list" | "tuple" => Val::List(children(n).into_iter().map(|c| self.val(c)).collect()),
            _ => Val::Other(self.paths_in(n)),
        }
    }

    /// A call: its callee resolved, positional and keyword arguments; `"…".format(x)` is a
    /// built string.
    fn call(&self, n: Node) -> Option<Call> {
        let f = n.child_by_field_name("function")?;
        let argl = n.child_by_field_name("arguments")?;
        let mut recv = None;
        let callee = match self.path(f) {
            Some(p) => self.resolve(&p),
            None => {
                // `"…".format(…)` and `"…".join(…)` build strings; other callees are not names.
                if f.kind() == "attribute" {
                    let o = f.child_by_field_name("object")?;
                    let a = self.text(f.child_by_field_name("attribute")?);
                    if o.kind() == "string" && a == "format" {
                        return None;
                    }
                    recv = Some(Box::new(self.val(o)));
                    format!("?.{a}")
                } else {
                    "?".into()
                }
            }
        };
        let mut call = Call {
            callee,
            args: vec![],
            kwargs: vec![],
            spread: false,
            recv,
            at: self.frame.src.pos(n),
        };
        for a in children(argl) {
            match a.kind() {
                "keyword_argument" => {
                    if let (Some(k), Some(v)) = (
                        a.child_by_field_name("name"),
                        a.child_by_field_name("value"),
                    ) {
                        call.kwargs.push((self.text(k).to_string(), self.val(v)));
                    }
                }
                "list_splat" | "dictionary_splat" => call.spread = true,
                "comment" => {}
                _ => call.args.push(self.val(a)),
            }
        }
        Some(call)
    }

    /// The value of `"…".format(…)` when the node is such a call.
    fn format_call(&self, n: Node) -> Option<Val> {
        let f = n.child_by_field_name("function")?;
        let o = f.child_by_field_name("object")?;
        if f.kind() != "attribute" || o.kind() != "string" {
            return None;
        }
        let prefix = match self.string(o) {
            Val::Str(s) | Val::Built { prefix: s, .. } => s,
            _ => String::new(),
        };
        Some(Val::Built {
            text: prefix.clone(),
            prefix: prefix.split('{').next().unwrap_or("").to_string(),
            names: self.paths_in(n.child_by_field_name("arguments")?),
        })
    }

    /// The names an assignment's left side binds.
    fn targets(&self, l: Node) -> Vec<String> {
        match self.path(l) {
            Some(p) => vec![p],
            None => children(l)
                .into_iter()
                .flat_map(|c| self.targets(c))
                .collect(),
        }
    }

    fn function(&self, n: Node) -> Function {
        let name = n
            .child_by_field_name("name")
            .map(|x| self.text(x).to_string());
        let mut params = Vec::new();
        if let Some(ps) = n.child_by_field_name("parameters") {
            for p in children(ps) {
                let id = match p.kind() {
                    "identifier" => Some(p),
                    "default_parameter" | "typed_default_parameter" => {
                        p.child_by_field_name("name")
                    }
                    "typed_parameter" | "list_splat_pattern" | "dictionary_splat_pattern" => {
                        children(p).into_iter().find(|c| c.kind() == "identifier")
                    }
                    _ => None,
                };
                if let Some(id) = id {
                    let s = self.text(id);
                    if s != "self" && s != "cls" {
                        params.push(s.to_string());
                    }
                }
            }
        }
        let tool = n
            .parent()
            .filter(|p| p.kind() == "decorated_definition")
            .and_then(|p| self.decorator_tool(p, name.as_deref()));
        self.frame.function(n, name, params, tool)
    }

    /// The tool name a decorator registers the function under, if one does.
    fn decorator_tool(&self, decorated: Node, fname: Option<&str>) -> Option<String> {
        for d in all_children(decorated)
            .into_iter()
            .filter(|c| c.kind() == "decorator")
        {
            let e = children(d).into_iter().next()?;
            let (path, call) = match e.kind() {
                "call" => (self.path(e.child_by_field_name("function")?), self.call(e)),
                _ => (self.path(e), None),
            };
            let Some(path) = path else { continue };
            if !TOOL_DECORATORS.contains(&crate::model::last(&path)) {
                continue;
            }
            let named = call.as_ref().and_then(|c| {
                c.kwarg("name")
                    .or(c.kwarg("name_override"))
                    .or(c.args.first())
                    .and_then(|v| v.as_str().map(str::to_string))
            });
            return named.or(fname.map(str::to_string));
        }
        None
    }

    /// `FunctionTool(fn)`, `StructuredTool.from_function(func=fn, name="x")`, `mcp.add_tool(fn)`.
    fn registration(&mut self, c: &Call) {
        if !TOOL_WRAPPERS.contains(&crate::model::last(&c.callee)) {
            return;
        }
        let func = ["fn", "func", "function", "coroutine"]
            .iter()
            .find_map(|k| c.kwarg(k))
            .or_else(|| c.args.iter().find(|a| matches!(a, Val::Path(_))));
        let Some(Val::Path(func)) = func else { return };
        if func.contains('.') {
            return;
        }
        let tool = c
            .kwarg("name")
            .and_then(|v| v.as_str())
            .or_else(|| c.args.iter().find_map(Val::as_str))
            .unwrap_or(func);
        self.frame.unit.registrations.push(Registration {
            tool: tool.to_string(),
            function: func.clone(),
        });
    }
}

/// The value of `a + b` on strings: constant when both are, else built with the constant
/// prefix.
pub(crate) fn concat(parts: Vec<Val>) -> Val {
    let mut prefix = String::new();
    let mut names = Vec::new();
    let mut text = String::new();
    let mut built = false;
    for p in parts {
        match p {
            Val::Str(s) if !built => {
                prefix.push_str(&s);
                text.push_str(&s);
            }
            Val::Str(s) => text.push_str(&s),
            Val::Built {
                prefix: p2,
                names: n,
                text: t2,
            } => {
                if !built {
                    prefix.push_str(&p2);
                }
                text.push_str(&t2);
                built = true;
                names.extend(n);
            }
            other => {
                built = true;
                names.extend(other.paths());
                if let Val::Call(c) = &other {
                    names.push(c.callee.clone());
                }
            }
        }
    }
    if built {
        Val::Built {
            prefix,
            names,
            text,
        }
    } else {
        Val::Str(prefix)
    }
}

impl<'t> Walker<'t> for Walk<'t> {
    fn at(&mut self, n: Node) -> bool {
        let mut pushed = false;
        match n.kind() {
            "call" => {
                if let Some(c) = self.call(n) {
                    self.registration(&c);
                    self.frame.unit.calls.push(c);
                }
            }
            "keyword_argument" => {
                if let (Some(k), Some(v)) = (
                    n.child_by_field_name("name"),
                    n.child_by_field_name("value"),
                ) {
                    self.frame.unit.pairs.push(Pair {
                        key: self.text(k).into(),
                        value: self.val(v),
                        at: self.frame.src.pos(k),
                    });
                }
            }
            "pair" => {
                if let (Some(k), Some(v)) =
                    (n.child_by_field_name("key"), n.child_by_field_name("value"))
                {
                    if let Val::Str(key) = self.val(k) {
                        self.frame.unit.pairs.push(Pair {
                            key,
                            value: self.val(v),
                            at: self.frame.src.pos(k),
                        });
                    }
                }
            }
            "assignment" | "augmented_assignment" | "named_expression" => {
                let (l, r) = sides(n, n.kind() == "named_expression");
                if let (Some(l), Some(r)) = (l, r) {
                    let targets = self.targets(l);
                    let value = self.format_call(r).unwrap_or_else(|| self.val(r));
                    self.frame.unit.assigns.push(Assign {
                        targets,
                        value,
                        at: self.frame.src.pos(n),
                    });
                }
            }
            "as_pattern" => {
                // `with X() as s`: s is bound to X().
                let value = children(n).first().map(|c| self.val(*c));
                if let (Some(value), Some(alias)) = (value, n.child_by_field_name("alias")) {
                    self.frame.unit.assigns.push(Assign {
                        targets: self.targets(alias),
                        value,
                        at: self.frame.src.pos(n),
                    });
                }
            }
            "string" => {
                let prose = n.parent().is_some_and(|p| {
                    p.kind() == "expression_statement" && p.named_child_count() == 1
                });
                for c in children(n) {
                    if c.kind() == "string_content" {
                        self.frame.unit.literals.push(Literal {
                            text: self.text(c).into(),
                            at: self.frame.src.pos(n),
                            prose,
                        });
                    }
                }
            }
            "function_definition" | "lambda" => {
                let f = self.function(n);
                pushed = self.open(f);
            }
            "return_statement" => {
                if let (Some(&fi), Some(e)) = (self.frame.stack.last(), children(n).first()) {
                    let v = self.format_call(*e).unwrap_or_else(|| self.val(*e));
                    let at = self.frame.src.pos(n);
                    self.frame.unit.functions[fi].returns.push((v, at));
                }
            }
            _ => {}
        }
        pushed
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::walk;
    use crate::model::Val;
    use ir::code::Language;

    #[test]
    fn calls_imports_and_tools() {
        let src = r#"
from subprocess import run as r
import requests
from agents import function_tool

@function_tool
def fetch(url: str, n=3):
    """Fetch a page."""
    resp = requests.get(url, timeout=5)
    r(f"echo {url}", shell=True)
    return resp.text

def helper(x): return x
tool = FunctionTool(helper)
"#;
        let u = walk(Language::Python, src).unwrap();
        let callees: Vec<&str> = u.calls.iter().map(|c| c.callee.as_str()).collect();
        assert!(callees.contains(&"requests.get"), "{callees:?}");
        assert!(callees.contains(&"subprocess.run"), "{callees:?}");
        let f = &u.functions[0];
        assert_eq!(f.tool.as_deref(), Some("fetch"));
        assert_eq!(f.params, vec!["url", "n"]);
        assert_eq!(f.returns.len(), 1);
        assert_eq!(u.functions[1].tool.as_deref(), Some("helper"));
        let run = u
            .calls
            .iter()
            .find(|c| c.callee == "subprocess.run")
            .unwrap();
        assert!(
            matches!(&run.args[0], Val::Built { prefix, names, .. } if prefix == "echo " && names == &vec!["url".to_string()])
        );
        assert!(u
            .literals
            .iter()
            .any(|l| l.prose && l.text == "Fetch a page."));
        assert!(u.assigns.iter().any(|a| a.targets == vec!["resp"]));
    }
}
