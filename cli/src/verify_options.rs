//! `qls verify`'s flags as typed values, for the Python API (`qls.verify(path, **options)`): each
//! keyword (the flag's name with `_` for `-`) set on [`VerifyArgs`] with its own type, so the wheel
//! hands over values, never a command line to parse back. Every flag of `qls verify` has its
//! keyword; a test walks clap's flags so a new one cannot be left out.

use crate::cmd_verify::{EngineArg, Format, Inputs, VerifyArgs};
use clap::{Args, FromArgMatches, ValueEnum};
use ir::agent::SessionSteps;
use serde_json::Value;
use std::path::PathBuf;

/// The keywords of the inputs' flags, which `qls verify` and `qls replay` share.
pub const INPUT_OPTIONS: &[&str] = &[
    "graph",
    "catalogue",
    "rulebook",
    "settings",
    "model_node",
    "tools_node",
    "no_code_checks",
];

/// The keywords of `qls verify`'s other flags: with [`INPUT_OPTIONS`], one per flag (the
/// agent.yaml is the positional input).
pub const PROOF_OPTIONS: &[&str] = &[
    "session_steps",
    "step_limit",
    "engine",
    "format",
    "jobs",
    "timeout",
    "timings",
    "replay",
    "keep",
    "certificates",
    "emit_case",
    "baseline",
    "rules_uri",
    "dependencies",
    "tasks",
    "sarif",
    "json",
];

/// Why an option was not taken.
#[derive(Debug, PartialEq, Eq)]
pub enum OptionError {
    /// No flag of `qls verify` has this keyword.
    Unknown(String),
    /// The value is not of the flag's type.
    Bad(String),
}

/// Whether `name` is a keyword of `qls verify`.
fn is_option(name: &str) -> bool {
    INPUT_OPTIONS.contains(&name) || PROOF_OPTIONS.contains(&name)
}

impl std::fmt::Display for OptionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OptionError::Unknown(name) if is_option(name) => write!(
                f,
                "`{name}` is an option of qls verify, not of qls replay (its options: {})",
                INPUT_OPTIONS.join(", ")
            ),
            OptionError::Unknown(name) => write!(
                f,
                "`{name}` is no option of qls verify (options: {}, {})",
                INPUT_OPTIONS.join(", "),
                PROOF_OPTIONS.join(", ")
            ),
            OptionError::Bad(why) => f.write_str(why),
        }
    }
}

impl VerifyArgs {
    /// What `qls verify` takes with no flag — the defaults clap's attributes declare, the
    /// binary's own — with `agent` as the input.
    pub fn defaults(agent: Option<PathBuf>) -> Result<VerifyArgs, String> {
        let cmd = VerifyArgs::augment_args(clap::Command::default());
        let m = cmd
            .try_get_matches_from(["verify"])
            .map_err(|e| e.to_string())?;
        let mut args = VerifyArgs::from_arg_matches(&m).map_err(|e| e.to_string())?;
        args.inputs.agent = agent;
        Ok(args)
    }

    /// Sets option `name` (a keyword of [`INPUT_OPTIONS`] or [`PROOF_OPTIONS`]) to `value`:
    /// `null` leaves the default, a flag takes a boolean, a repeatable flag a list (or one
    /// value), a path or a text a string.
    pub fn set(&mut self, name: &str, value: &Value) -> Result<(), OptionError> {
        if !is_option(name) {
            return Err(OptionError::Unknown(name.to_string()));
        }
        if value.is_null() {
            return Ok(());
        }
        if INPUT_OPTIONS.contains(&name) {
            return self.inputs.set(name, value);
        }
        let v = Typed { name, value };
        match name {
            "session_steps" => {
                let text = match value {
                    Value::Number(n) => n.to_string(),
                    _ => v.text()?,
                };
                self.session_steps = Some(SessionSteps::parse(&text).map_err(|e| v.bad(&e))?)
            }
            "step_limit" => self.step_limit = Some(v.whole()?),
            "engine" => self.engine = v.choice::<EngineArg>()?,
            "format" => self.format = v.choice::<Format>()?,
            "jobs" => self.jobs = Some(v.whole()?),
            "timeout" => self.timeout = v.whole()?,
            "timings" => self.timings = v.flag()?,
            "replay" => self.replay = v.flag()?,
            "keep" => self.keep = Some(v.path()?),
            "certificates" => self.certificates = Some(v.path()?),
            "emit_case" => self.emit_case = Some(v.path()?),
            "baseline" => self.baseline = Some(v.path()?),
            "rules_uri" => self.rules_uri = Some(v.text()?),
            "dependencies" => self.dependencies = v.list(Typed::path)?,
            "tasks" => self.tasks = Some(v.path()?),
            "sarif" => self.sarif = Some(v.path()?),
            "json" => self.json = Some(v.path()?),
            _ => return Err(OptionError::Unknown(name.to_string())),
        }
        Ok(())
    }
}

impl Inputs {
    /// Sets input option `name` (a keyword of [`INPUT_OPTIONS`]) to `value`, as
    /// [`VerifyArgs::set`] does: `qls replay`'s inputs, and `qls verify`'s.
    pub fn set(&mut self, name: &str, value: &Value) -> Result<(), OptionError> {
        if !INPUT_OPTIONS.contains(&name) {
            return Err(OptionError::Unknown(name.to_string()));
        }
        if value.is_null() {
            return Ok(());
        }
        let v = Typed { name, value };
        match name {
            "graph" => self.graph = Some(v.path()?),
            "catalogue" => self.catalogue = v.list(Typed::path)?,
            "rulebook" => self.rulebook = Some(v.path()?),
            "settings" => self.settings = Some(v.path()?),
            "model_node" => self.langgraph.model_node = v.list(Typed::text)?,
            "tools_node" => {
                self.langgraph.tools_node = v.list(|t| {
                    readers::langgraph::Options::parse_tools_node(&t.text()?).map_err(|e| t.bad(&e))
                })?
            }
            "no_code_checks" => self.no_code_checks = v.flag()?,
            _ => return Err(OptionError::Unknown(name.to_string())),
        }
        Ok(())
    }
}

/// One option's value, read as the type its flag takes.
#[derive(Clone, Copy)]
struct Typed<'a> {
    name: &'a str,
    value: &'a Value,
}

impl<'a> Typed<'a> {
    fn bad(&self, why: &str) -> OptionError {
        OptionError::Bad(format!("option `{}`: {why}", self.name))
    }

    fn expected(&self, what: &str) -> OptionError {
        self.bad(&format!("expected {what}, not {}", self.value))
    }

    fn text(&self) -> Result<String, OptionError> {
        match self.value {
            Value::String(s) => Ok(s.clone()),
            _ => Err(self.expected("a string")),
        }
    }

    fn path(&self) -> Result<PathBuf, OptionError> {
        self.text()
            .map(PathBuf::from)
            .map_err(|_| self.expected("a path"))
    }

    fn flag(&self) -> Result<bool, OptionError> {
        self.value
            .as_bool()
            .ok_or_else(|| self.expected("true or false"))
    }

    fn whole<T: TryFrom<u64>>(&self) -> Result<T, OptionError> {
        self.value
            .as_u64()
            .and_then(|n| T::try_from(n).ok())
            .ok_or_else(|| self.expected("a whole number"))
    }

    fn choice<T: ValueEnum>(&self) -> Result<T, OptionError> {
        let text = self.text()?;
        T::from_str(&text, false).map_err(|_| {
            let names: Vec<String> = T::value_variants()
                .iter()
                .filter_map(|v| v.to_possible_value().map(|p| p.get_name().to_string()))
                .collect();
            self.bad(&format!("`{text}` is not one of {}", names.join(", ")))
        })
    }

    /// A repeatable flag's values: a list, or one value alone.
    fn list<T>(
        &self,
        each: impl Fn(&Typed<'a>) -> Result<T, OptionError>,
    ) -> Result<Vec<T>, OptionError> {
        match self.value {
            Value::Array(items) => items
                .iter()
                .map(|value| {
                    each(&Typed {
                        name: self.name,
                        value,
                    })
                })
                .collect(),
            _ => Ok(vec![each(self)?]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeSet;

    #[test]
    fn every_flag_of_qls_verify_has_its_keyword() {
        let cmd = VerifyArgs::augment_args(clap::Command::default());
        let flags: BTreeSet<String> = cmd
            .get_arguments()
            .filter_map(|a| a.get_long())
            .map(|l| l.replace('-', "_"))
            .collect();
        let all = || INPUT_OPTIONS.iter().chain(PROOF_OPTIONS);
        let keywords: BTreeSet<String> = all().map(|s| s.to_string()).collect();
        assert_eq!(flags, keywords);
        // And each keyword is taken (a value of the wrong type is refused, never unknown).
        let mut args = VerifyArgs::defaults(None).unwrap();
        for name in all() {
            let r = args.set(name, &json!({"not": "a value"}));
            assert!(matches!(r, Err(OptionError::Bad(_))), "{name}: {r:?}");
        }
    }

    #[test]
    fn replays_inputs_are_verifys_input_flags() {
        let cmd = crate::cmd_verify::ReplayArgs::augment_args(clap::Command::default());
        let flags: BTreeSet<String> = cmd
            .get_arguments()
            .filter_map(|a| a.get_long())
            .filter(|l| *l != "trace") // a file qls replay writes: the Python API returns it
            .map(|l| l.replace('-', "_"))
            .collect();
        let keywords: BTreeSet<String> = INPUT_OPTIONS.iter().map(|s| s.to_string()).collect();
        assert_eq!(flags, keywords);
        let mut inputs = VerifyArgs::defaults(None).unwrap().inputs;
        assert_eq!(
            inputs.set("step_limit", &json!(3)).unwrap_err().to_string(),
            "`step_limit` is an option of qls verify, not of qls replay (its options: graph, \
             catalogue, rulebook, settings, model_node, tools_node, no_code_checks)"
        );
    }

    #[test]
    fn the_defaults_are_the_binarys() {
        let a = VerifyArgs::defaults(Some("agent.yaml".into())).unwrap();
        assert_eq!(a.inputs.agent, Some(PathBuf::from("agent.yaml")));
        assert_eq!(a.timeout, prover::proof::defaults::TIMEOUT_SECS);
        assert!(matches!(a.engine, EngineArg::Both));
        assert!(!a.replay && a.sarif.is_none() && a.session_steps.is_none());
    }

    #[test]
    fn each_value_is_read_as_its_flags_type() {
        let mut a = VerifyArgs::defaults(None).unwrap();
        a.set("session_steps", &json!(2)).unwrap();
        assert_eq!(a.session_steps, Some(SessionSteps::Turns(2)));
        a.set("session_steps", &json!("any")).unwrap();
        assert_eq!(a.session_steps, Some(SessionSteps::Any));
        a.set("replay", &json!(true)).unwrap();
        a.set("engine", &json!("bfs")).unwrap();
        a.set("catalogue", &json!("one.yaml")).unwrap();
        a.set("dependencies", &json!(["uv.lock", "requirements.txt"]))
            .unwrap();
        a.set("tools_node", &json!(["tools=search,book"])).unwrap();
        a.set("sarif", &Value::Null).unwrap(); // null: the default stays
        assert!(a.replay && matches!(a.engine, EngineArg::Bfs) && a.sarif.is_none());
        assert_eq!(a.inputs.catalogue, vec![PathBuf::from("one.yaml")]);
        assert_eq!(a.dependencies.len(), 2);
        assert_eq!(
            a.inputs.langgraph.tools_node,
            vec![(
                "tools".to_string(),
                vec!["search".to_string(), "book".to_string()]
            )]
        );
        let bad = |name: &str, v: Value| a_fresh().set(name, &v).unwrap_err().to_string();
        assert_eq!(
            bad("session_steps", json!(0)),
            "option `session_steps`: session_steps must be at least 1 (or `any`)"
        );
        assert_eq!(
            bad("step_limit", json!(-1)),
            "option `step_limit`: expected a whole number, not -1"
        );
        assert_eq!(
            bad("engine", json!("z3")),
            "option `engine`: `z3` is not one of both, bmc, bfs, bdd"
        );
        assert!(
            bad("sesion_steps", json!(2)).starts_with("`sesion_steps` is no option of qls verify")
        );
    }

    fn a_fresh() -> VerifyArgs {
        VerifyArgs::defaults(None).unwrap()
    }
}
