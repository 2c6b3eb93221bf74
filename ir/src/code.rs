//! The tools' own source code as the code checks are handed it: each file's text, its language
//! and whether agent.yaml names it as a tool module. `readers::sources` finds and reads them;
//! the `codecheck` crate parses and judges them. Nothing here reads a file.

use crate::Loc;
use serde::{Deserialize, Serialize};

/// A language the code checks parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// `.py`
    Python,
    /// `.js`, `.mjs`, `.cjs`, `.jsx`
    JavaScript,
    /// `.ts`, `.mts`, `.cts`
    TypeScript,
    /// `.tsx`
    Tsx,
    /// `.go`
    Go,
}

impl Language {
    /// The language of a file by its extension (`None` for every other file).
    pub fn of_path(path: &str) -> Option<Language> {
        let ext = path.rsplit_once('.')?.1;
        Some(match ext {
            "py" => Language::Python,
            "js" | "mjs" | "cjs" | "jsx" => Language::JavaScript,
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "go" => Language::Go,
            _ => return None,
        })
        .filter(|_| !path.ends_with(".d.ts"))
    }

    /// The key of an agent.yaml `tools:` entry naming a module of this language.
    pub fn key(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::JavaScript => "javascript",
            Language::TypeScript | Language::Tsx => "typescript",
            Language::Go => "go",
        }
    }

    /// The word reports use.
    pub fn name(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::JavaScript => "javascript",
            Language::TypeScript => "typescript",
            Language::Tsx => "tsx",
            Language::Go => "go",
        }
    }
}

/// One source file handed to the code checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFile {
    /// The path reports name, relative to agent.yaml's folder (`shop/tools.py`).
    pub file: String,
    /// Its language.
    pub language: Language,
    /// Its text (a byte-order mark dropped).
    pub text: String,
    /// Its SHA-256.
    pub sha256: String,
    /// The agent.yaml `tools:` entry that names it as a tool module, when one does (a function
    /// named like a catalogue tool in such a file is that tool's implementation).
    pub named_by: Option<Loc>,
}

/// The source files of a project: the named modules and the files beside agent.yaml.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sources {
    /// Whether agent.yaml names tool modules (then the report's code-checks line is printed
    /// even when no file was found beside it).
    pub modules_named: bool,
    /// The files, ordered by path.
    pub files: Vec<SourceFile>,
    /// The code checks were turned off (`--no-code-checks`): no file was read, not even the
    /// modules agent.yaml names, and the report says so on its code-checks line.
    pub turned_off: bool,
}

impl Sources {
    /// Whether the code checks have anything to say: a module is named or a file was found
    /// (never when they were turned off).
    pub fn in_play(&self) -> bool {
        !self.turned_off && (self.modules_named || !self.files.is_empty())
    }

    /// The sources of a run with the code checks turned off: nothing read.
    pub fn turned_off(modules_named: bool) -> Sources {
        Sources {
            modules_named,
            files: vec![],
            turned_off: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_by_extension() {
        assert_eq!(Language::of_path("a/b.py"), Some(Language::Python));
        assert_eq!(Language::of_path("x.mjs"), Some(Language::JavaScript));
        assert_eq!(Language::of_path("x.ts"), Some(Language::TypeScript));
        assert_eq!(Language::of_path("x.d.ts"), None);
        assert_eq!(Language::of_path("x.tsx"), Some(Language::Tsx));
        assert_eq!(Language::of_path("main.go"), Some(Language::Go));
        assert_eq!(Language::of_path("README.md"), None);
        assert_eq!(Language::of_path("Makefile"), None);
    }
}
