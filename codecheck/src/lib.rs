//! The code checks: the tools' own source (Python, JavaScript, TypeScript, Go), parsed with
//! tree-sitter grammars and read for network and credential problems (QC001–QC008) and for
//! declarations the code contradicts (QC101–QC104).
//!
//! **Text in, findings out**: the files are found and read by `readers::sources`; this crate
//! reads no file, prints nothing and reaches no network. Each language's syntax tree is walked
//! once into a small code model (`model.rs`, filled by `lang/`); the rules (`checks.rs`,
//! `declarations.rs`) read that model and the call tables of `effects.rs`, never the text.
#![warn(missing_docs)]

mod argv;
mod checks;
mod declarations;
mod effects;
pub mod fixes;
pub mod lang;
pub mod model;
pub mod rules;
mod secrets;

pub use fixes::{fixes, SourceFix, TextEdit};
pub use rules::{rules_hash, CodeRule, CodeRuleInfo};

use ir::catalogue::Catalogue;
use ir::code::{Language, Sources};
use ir::Loc;
use model::Pos;

/// One rule's hit in a file, before the file's name is put on it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Hit {
    rule: CodeRule,
    at: Pos,
    message: String,
    tool: Option<String>,
    declared_at: Option<Loc>,
}

impl Hit {
    fn new(rule: CodeRule, at: Pos, message: String) -> Hit {
        Hit {
            rule,
            at,
            message,
            tool: None,
            declared_at: None,
        }
    }
}

/// One code finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeFinding {
    /// The rule.
    pub rule: CodeRule,
    /// The file, as the report names it.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
    /// What was found.
    pub message: String,
    /// For a contradiction: the tool.
    pub tool: Option<String>,
    /// For a contradiction: where the catalogue declares the tool.
    pub declared_at: Option<Loc>,
}

impl CodeFinding {
    /// `shop/tools.py:12:5`.
    pub fn place(&self) -> String {
        format!("{}:{}:{}", self.file, self.line, self.column)
    }
}

/// A file the checks read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckedFile {
    /// The file.
    pub file: String,
    /// Its language.
    pub language: Language,
    /// Its SHA-256.
    pub sha256: String,
    /// The grammar found syntax errors and recovered (the rules read what it recovered).
    pub recovered: bool,
    /// Why the file could not be parsed at all, when it could not (the gate then fails: a file
    /// the checks did not read is never clean).
    pub unparsed: Option<String>,
    /// The catalogue's tools whose implementation is in it.
    pub tools: Vec<String>,
    /// Every tool name the code registers (a decorator, a registration call, a `case` of a
    /// `tools/call` switch), declared in the catalogue or not.
    pub registered: Vec<String>,
}

/// What the code checks found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeReport {
    /// The rule set's hash (12 hex digits).
    pub rules: String,
    /// The files read, ordered by path.
    pub files: Vec<CheckedFile>,
    /// The findings, ordered by file, line, column and rule.
    pub findings: Vec<CodeFinding>,
}

impl CodeReport {
    /// Whether the code checks let the gate pass: no finding of a gate-failing rule and every
    /// file parsed.
    pub fn passes(&self) -> bool {
        !self.findings.iter().any(|f| f.rule.info().fails_gate)
            && self.files.iter().all(|f| f.unparsed.is_none())
    }
}

/// Runs every code rule and the declarations check over the sources.
pub fn check(sources: &Sources, catalogue: &Catalogue) -> CodeReport {
    let mut files = Vec::new();
    let mut findings = Vec::new();
    for f in &sources.files {
        let (unit, recovered) = match lang::walk_checked(f.language, &f.text) {
            Ok(x) => x,
            Err(e) => {
                files.push(CheckedFile {
                    file: f.file.clone(),
                    language: f.language,
                    sha256: f.sha256.clone(),
                    recovered: false,
                    unparsed: Some(e.to_string()),
                    tools: vec![],
                    registered: vec![],
                });
                continue;
            }
        };
        let cx = effects::FileCtx::new(f.language, &unit);
        let mut hits = checks::run(&cx);
        let imps = declarations::implementations(&cx, catalogue, f.named_by.is_some());
        for imp in &imps {
            hits.extend(declarations::contradictions(&cx, imp));
        }
        let mut tools: Vec<String> = imps.iter().map(|i| i.tool.name.clone()).collect();
        tools.dedup();
        findings.extend(hits.into_iter().map(|h| CodeFinding {
            rule: h.rule,
            file: f.file.clone(),
            line: h.at.line,
            column: h.at.col,
            message: h.message,
            tool: h.tool,
            declared_at: h.declared_at,
        }));
        files.push(CheckedFile {
            file: f.file.clone(),
            language: f.language,
            sha256: f.sha256.clone(),
            recovered,
            unparsed: None,
            tools,
            registered: unit
                .functions
                .iter()
                .filter_map(|f| f.tool.clone())
                .collect(),
        });
    }
    findings.sort_by(|a, b| {
        (&a.file, a.line, a.column, a.rule).cmp(&(&b.file, b.line, b.column, b.rule))
    });
    findings.dedup_by(|a, b| {
        (&a.file, a.line, a.column, a.rule) == (&b.file, b.line, b.column, b.rule)
    });
    files.sort_by(|a, b| a.file.cmp(&b.file));
    CodeReport {
        rules: rules_hash(),
        files,
        findings,
    }
}

/// The findings of one file's text, for the rules' tests.
#[cfg(test)]
pub(crate) fn findings_of(
    lang: Language,
    text: &str,
    catalogue: &Catalogue,
    named: bool,
) -> Vec<CodeFinding> {
    let file = ir::code::SourceFile {
        file: "t".into(),
        language: lang,
        text: text.into(),
        sha256: String::new(),
        named_by: named.then(|| Loc::new("agent.yaml", 1)),
    };
    let sources = Sources {
        modules_named: named,
        files: vec![file],
        turned_off: false,
    };
    check(&sources, catalogue).findings
}
