//! Go's syntax tree (tree-sitter-go) walked into a [`Unit`]: calls (package-qualified callees
//! resolved through import aliases to the import path's last element, so `exec.Command` is
//! `exec.Command` whatever the file calls the package), assignments (`:=`, `=`, `var`),
//! composite-literal fields as pairs, string literals, functions and function literals, and
//! tool registrations (mcp-go's `s.AddTool(mcp.NewTool("name", …), handler)`, the official SDK's
//! `mcp.AddTool(server, &mcp.Tool{Name: "name"}, handler)`).

use super::{children, descend, each_node, Frame, Src, Walker};
use crate::model::{Assign, Call, Function, Literal, Pair, Registration, Unit, Val};
use std::collections::HashMap;
use tree_sitter::Node;

struct Walk<'t> {
    frame: Frame<'t>,
    by_byte: HashMap<usize, String>,
}

pub(super) fn walk(src: &Src, root: Node) -> Unit {
    let mut w = Walk {
        frame: Frame::new(src),
        by_byte: HashMap::new(),
    };
    each_node(root, &mut |n| w.import(n));
    descend(&mut w, root);
    w.frame.unit
}

frame_deref!(Walk);

impl<'t> Walk<'t> {
    fn string_text(&self, n: Node) -> String {
        children(n)
            .into_iter()
            .filter(|c| {
                matches!(
                    c.kind(),
                    "interpreted_string_literal_content"
                        | "raw_string_literal_content"
                        | "escape_sequence"
                )
            })
            .map(|c| self.text(c))
            .collect()
    }

    /// `import x "net/http"`: the alias names the import path's last element.
    fn import(&mut self, n: Node) {
        if n.kind() != "import_spec" {
            return;
        }
        let (Some(name), Some(path)) =
            (n.child_by_field_name("name"), n.child_by_field_name("path"))
        else {
            return;
        };
        let path = self.string_text(path);
        let last = path.rsplit('/').next().unwrap_or(&path).to_string();
        let alias = self.text(name);
        if alias != "_" && alias != "." {
            self.frame.aliases.insert(alias.to_string(), last);
        }
    }

    fn path(&self, n: Node) -> Option<String> {
        match n.kind() {
            "identifier" | "field_identifier" | "package_identifier" => {
                Some(self.text(n).to_string())
            }
            "selector_expression" => {
                let o = self.path(n.child_by_field_name("operand")?)?;
                let f = self.text(n.child_by_field_name("field")?);
                Some(format!("{o}.{f}"))
            }
            "parenthesized_expression" => children(n).first().and_then(|c| self.path(*c)),
            _ => None,
        }
    }

    /// A dotted path resolved through the imports (a bare name is never a package).
    fn resolve(&self, path: &str) -> String {
        match path.contains('.') {
            true => self.frame.resolve(path),
            false => path.to_string(),
        }
    }

    fn paths_in(&self, n: Node) -> Vec<String> {
        if let Some(p) = self.path(n) {
            return vec![p];
        }
        match n.kind() {
            "type_identifier" | "qualified_type" | "field_identifier" => vec![],
            _ => children(n)
                .into_iter()
                .flat_map(|c| self.paths_in(c))
                .collect(),
        }
    }

    fn val(&self, n: Node) -> Val {
        match n.kind() {
            "interpreted_string_literal" | "raw_string_literal" => Val::Str(self.string_text(n)),
            "true" => Val::Bool(true),
            "false" => Val::Bool(false),
            "nil" => Val::Null,
            "int_literal" | "float_literal" => Val::Num,
            "identifier" | "selector_expression" => match self.path(n) {
                Some(p) => Val::Path(self.resolve(&p)),
                None => Val::Other(self.paths_in(n)),
            },
            "parenthesized_expression" => children(n)
                .first()
                .map(|c| self.val(*c))
                .unwrap_or(Val::Other(vec![])),
            "unary_expression" => {
                let op = n.child_by_field_name("operand");
                match op {
                    Some(o) if self.text(n).starts_with('&') => self.val(o),
                    _ => Val::Other(self.paths_in(n)),
                }
            }
            "call_expression" => {
                let c = self.call(n);
                // fmt.Sprintf("…%s", x) builds a string.
                match c {
                    Some(c) if c.callee == "fmt.Sprintf" => match c.args.first() {
                        Some(Val::Str(f)) => Val::Built {
                            prefix: f.split('%').next().unwrap_or("").to_string(),
                            names: c.args[1..].iter().flat_map(Val::paths).collect(),
                            text: f.clone(),
                        },
                        _ => Val::Other(c.args.iter().flat_map(Val::paths).collect()),
                    },
                    Some(c) => Val::Call(Box::new(c)),
                    None => Val::Other(self.paths_in(n)),
                }
            }
            "binary_expression" => {
                let op = n.child_by_field_name("operator").map(|o| self.text(o));
                match (
                    op,
                    n.child_by_field_name("left"),
                    n.child_by_field_name("right"),
                ) {
                    (Some("+"), Some(l), Some(r)) => {
                        super::python::concat(vec![self.val(l), self.val(r)])
                    }
                    _ => Val::Other(self.paths_in(n)),
                }
            }
            "composite_literal" => self
                .composite(n)
                .map(|c| Val::Call(Box::new(c)))
                .unwrap_or_else(|| match n.child_by_field_name("body") {
                    Some(b) => Val::List(
                        children(b)
                            .into_iter()
                            .map(|e| self.val(self.element(e)))
                            .collect(),
                    ),
                    None => Val::List(vec![]),
                }),
            "literal_element" => children(n)
                .first()
                .map(|c| self.val(*c))
                .unwrap_or(Val::Other(vec![])),
            _ => Val::Other(self.paths_in(n)),
        }
    }

    fn element<'a>(&self, e: Node<'a>) -> Node<'a> {
        if e.kind() == "literal_element" {
            children(e).first().copied().unwrap_or(e)
        } else {
            e
        }
    }

    /// A literal's `Key: value` fields.
    fn fields(&self, body: Node) -> Vec<(String, Val)> {
        children(body)
            .into_iter()
            .filter(|e| e.kind() == "keyed_element")
            .filter_map(|e| {
                let parts = children(e);
                let (k, v) = (parts.first()?, parts.get(1)?);
                let k = self.element(*k);
                let key = match k.kind() {
                    "interpreted_string_literal" | "raw_string_literal" => self.string_text(k),
                    _ => self.text(k).to_string(),
                };
                Some((key, self.val(self.element(*v))))
            })
            .collect()
    }

    /// A composite literal of a named type (`http.Client{Timeout: t}`, `tls.Config{…}`) as
    /// the constructor call it is: the type as the callee, its fields as one object argument.
    /// Slices, arrays and maps are lists (`None` here).
    fn composite(&self, n: Node) -> Option<Call> {
        let ty = n.child_by_field_name("type")?;
        if !matches!(
            ty.kind(),
            "qualified_type" | "type_identifier" | "generic_type"
        ) {
            return None;
        }
        let fields = n
            .child_by_field_name("body")
            .map(|b| self.fields(b))
            .unwrap_or_default();
        Some(Call {
            callee: self.resolve(self.text(ty)),
            args: vec![Val::Object(fields)],
            kwargs: vec![],
            spread: false,
            recv: None,
            at: self.frame.src.pos(n),
        })
    }

    fn call(&self, n: Node) -> Option<Call> {
        let f = n.child_by_field_name("function")?;
        let callee = self
            .path(f)
            .map(|p| self.resolve(&p))
            .unwrap_or_else(|| "?".into());
        let mut call = Call {
            callee,
            args: vec![],
            kwargs: vec![],
            spread: false,
            recv: None,
            at: self.frame.src.pos(n),
        };
        if let Some(argl) = n.child_by_field_name("arguments") {
            for a in children(argl) {
                match a.kind() {
                    "comment" => {}
                    "variadic_argument" => call.spread = true,
                    _ => call.args.push(self.val(a)),
                }
            }
        }
        Some(call)
    }

    fn function(&self, n: Node) -> Function {
        let name = n
            .child_by_field_name("name")
            .map(|x| self.text(x).to_string());
        let mut params = Vec::new();
        if let Some(ps) = n.child_by_field_name("parameters") {
            for p in children(ps) {
                let ty = p
                    .child_by_field_name("type")
                    .map(|t| self.text(t))
                    .unwrap_or("");
                if ty.contains("context.Context") {
                    continue;
                }
                let mut cur = p.walk();
                params.extend(
                    p.children_by_field_name("name", &mut cur)
                        .map(|x| self.text(x).to_string()),
                );
            }
        }
        self.frame
            .function(n, name, params, self.by_byte.get(&n.start_byte()).cloned())
    }

    /// `s.AddTool(mcp.NewTool("name", …), handler)`, `mcp.AddTool(server, &mcp.Tool{Name:
    /// "name"}, handler)`: the handler is a function literal (by its byte) or a function or
    /// method named by its last segment.
    fn registration(&mut self, n: Node, c: &Call) {
        if crate::model::last(&c.callee) != "AddTool" {
            return;
        }
        let name = c.args.iter().find_map(|a| match a {
            Val::Call(t) if crate::model::last(&t.callee) == "NewTool" => {
                t.args.first().and_then(Val::as_str).map(str::to_string)
            }
            Val::Call(t) if crate::model::last(&t.callee) == "Tool" => t
                .args
                .first()?
                .entry("Name")
                .and_then(Val::as_str)
                .map(str::to_string),
            _ => None,
        });
        let Some(name) = name else { return };
        let Some(argl) = n.child_by_field_name("arguments") else {
            return;
        };
        let Some(h) = children(argl).into_iter().rfind(|a| a.kind() != "comment") else {
            return;
        };
        if h.kind() == "func_literal" {
            self.by_byte.insert(h.start_byte(), name);
        } else if let Some(p) = self.path(h) {
            self.frame.unit.registrations.push(Registration {
                tool: name,
                function: crate::model::last(&p).to_string(),
            });
        }
    }
}

impl<'t> Walker<'t> for Walk<'t> {
    fn at(&mut self, n: Node) -> bool {
        let mut pushed = false;
        match n.kind() {
            "call_expression" => {
                if let Some(c) = self.call(n) {
                    self.registration(n, &c);
                    self.frame.unit.calls.push(c);
                }
            }
            "composite_literal" => {
                if let Some(c) = self.composite(n) {
                    self.frame.unit.calls.push(c);
                }
            }
            "keyed_element" => {
                let parts = children(n);
                if let (Some(k), Some(v)) = (parts.first(), parts.get(1)) {
                    let k = self.element(*k);
                    self.frame.unit.pairs.push(Pair {
                        key: self.text(k).trim_matches('"').to_string(),
                        value: self.val(self.element(*v)),
                        at: self.frame.src.pos(n),
                    });
                }
            }
            "short_var_declaration" | "assignment_statement" | "var_spec" | "const_spec" => {
                let (l, r) = if matches!(n.kind(), "var_spec" | "const_spec") {
                    (Some(n), n.child_by_field_name("value"))
                } else {
                    (
                        n.child_by_field_name("left"),
                        n.child_by_field_name("right"),
                    )
                };
                if let (Some(l), Some(r)) = (l, r) {
                    let targets: Vec<String> = if matches!(n.kind(), "var_spec" | "const_spec") {
                        let mut cur = n.walk();
                        n.children_by_field_name("name", &mut cur)
                            .map(|x| self.text(x).to_string())
                            .collect()
                    } else {
                        children(l)
                            .into_iter()
                            .filter_map(|x| self.path(x))
                            .collect()
                    };
                    let vals: Vec<Node> = children(r);
                    if vals.len() == targets.len() && vals.len() > 1 {
                        for (t, v) in targets.into_iter().zip(vals) {
                            self.frame.unit.assigns.push(Assign {
                                targets: vec![t],
                                value: self.val(v),
                                at: self.frame.src.pos(n),
                            });
                        }
                    } else if let Some(v) = vals.first() {
                        self.frame.unit.assigns.push(Assign {
                            targets,
                            value: self.val(*v),
                            at: self.frame.src.pos(n),
                        });
                    }
                }
            }
            "interpreted_string_literal" | "raw_string_literal" => {
                self.frame.unit.literals.push(Literal {
                    text: self.string_text(n),
                    at: self.frame.src.pos(n),
                    prose: false,
                });
            }
            "function_declaration" | "method_declaration" | "func_literal" => {
                let f = self.function(n);
                pushed = self.open(f);
            }
            "return_statement" => {
                if let (Some(&fi), Some(e)) = (self.frame.stack.last(), children(n).first()) {
                    let v = self.val(children(*e).first().copied().unwrap_or(*e));
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
    fn calls_fields_and_tools() {
        let src = r#"package main
import (
    "net/http"
    osexec "os/exec"
    "github.com/mark3labs/mcp-go/mcp"
)
func main() {
    s.AddTool(mcp.NewTool("fetch", mcp.WithString("url")), fetchHandler)
    c := &http.Client{Timeout: 5}
    _ = c
}
func fetchHandler(ctx context.Context, request mcp.CallToolRequest) (*mcp.CallToolResult, error) {
    url := request.GetString("url", "")
    resp, err := http.Get(url)
    osexec.Command("sh", "-c", url)
    return nil, err
}
"#;
        let u = walk(Language::Go, src).unwrap();
        let callees: Vec<&str> = u.calls.iter().map(|c| c.callee.as_str()).collect();
        assert!(callees.contains(&"exec.Command"), "{callees:?}");
        assert!(callees.contains(&"http.Get"), "{callees:?}");
        let h = u
            .functions
            .iter()
            .find(|f| f.name.as_deref() == Some("fetchHandler"))
            .unwrap();
        assert_eq!(h.tool.as_deref(), Some("fetch"));
        assert_eq!(h.params, vec!["request"]);
        assert!(u.pairs.iter().any(|p| p.key == "Timeout"));
        let lit = u.assigns.iter().find(|a| a.targets == vec!["c"]).unwrap();
        assert!(
            matches!(&lit.value, Val::Call(c) if c.callee == "http.Client" && c.args[0].entry("Timeout").is_some())
        );
    }
}
