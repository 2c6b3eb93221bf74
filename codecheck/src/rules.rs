//! The code rules, each one record: id, title, CWE, severity, whether it fails the gate, what it
//! covers and its fix. `docs/code-checks.md` documents the same records with examples; the rule
//! set's hash (the report's `rules …`) is taken over these records and [`RULESET_VERSION`], so
//! a changed rule changes the hash.

use ir::vocab::Severity;
use sha2::{Digest, Sha256};

/// Bumped whenever what a rule fires on changes without its record changing.
pub const RULESET_VERSION: &str = "qls-code-rules/2";

/// A code rule's id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CodeRule {
    /// QC001: a provider key in source.
    ProviderKey,
    /// QC002: a secret-looking literal bound to a credential-like name.
    SecretLiteral,
    /// QC003: TLS certificate verification turned off.
    TlsOff,
    /// QC004: a plain-HTTP endpoint on a host that is not local.
    PlainHttp,
    /// QC005: an outbound request with no timeout.
    NoTimeout,
    /// QC006: credentials in a URL.
    UrlCredentials,
    /// QC007: a credential written to a log.
    LoggedCredential,
    /// QC008: a shell command built from non-constant input.
    ShellInjection,
    /// QC101: declared `read`, but the code writes.
    DeclaredReadWrites,
    /// QC102: fetches or sends to a URL from an argument without `sends_out`.
    UrlFromArgument,
    /// QC103: returns content fetched from a URL from an argument without `returns: untrusted`.
    UntrustedUndeclared,
    /// QC104: runs a process from an argument that has no `code`/`shell` kind.
    ProcessFromArgument,
    /// QC105: passes an argument to a fixed program where it can begin an element of the
    /// command line, with no `--` before it (argument injection).
    ArgumentInjection,
}

/// A rule's record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeRuleInfo {
    /// The id (`QC001`).
    pub id: &'static str,
    /// The title.
    pub title: &'static str,
    /// The CWE (`CWE-798`).
    pub cwe: &'static str,
    /// `High`, `Medium` or `Review`.
    pub severity: Severity,
    /// Whether a finding of it fails the gate.
    pub fails_gate: bool,
    /// The fix.
    pub fix: &'static str,
}

impl CodeRule {
    /// Every rule, in the report's order.
    pub const ALL: [CodeRule; 13] = [
        CodeRule::ProviderKey,
        CodeRule::SecretLiteral,
        CodeRule::TlsOff,
        CodeRule::PlainHttp,
        CodeRule::NoTimeout,
        CodeRule::UrlCredentials,
        CodeRule::LoggedCredential,
        CodeRule::ShellInjection,
        CodeRule::DeclaredReadWrites,
        CodeRule::UrlFromArgument,
        CodeRule::UntrustedUndeclared,
        CodeRule::ProcessFromArgument,
        CodeRule::ArgumentInjection,
    ];

    /// The rule's record.
    pub fn info(self) -> CodeRuleInfo {
        let (id, title, cwe, severity, fix) = match self {
            CodeRule::ProviderKey => ("QC001", "Provider key in source", "CWE-798", Severity::High,
                "Remove the key from the code, revoke it at the provider, and read it from the environment or a secret store."),
            CodeRule::SecretLiteral => ("QC002", "Hard-coded secret", "CWE-798", Severity::High,
                "Read the secret from the environment or a secret store instead of writing it in the code, and rotate it."),
            CodeRule::TlsOff => ("QC003", "TLS verification turned off", "CWE-295", Severity::High,
                "Leave certificate verification on; trust a private CA by passing its bundle, never by turning verification off."),
            CodeRule::PlainHttp => ("QC004", "Plain-HTTP endpoint", "CWE-319", Severity::Medium,
                "Use https:// for every host that is not this machine."),
            CodeRule::NoTimeout => ("QC005", "Request without a timeout", "CWE-1088", Severity::Medium,
                "Give the request a timeout (requests: timeout=…; Go: an http.Client with Timeout, or a context with a deadline; axios: timeout)."),
            CodeRule::UrlCredentials => ("QC006", "Credentials in a URL", "CWE-522", Severity::High,
                "Send credentials in a header or an auth parameter, never in the URL, where logs and proxies keep them."),
            CodeRule::LoggedCredential => ("QC007", "Credential written to a log", "CWE-532", Severity::High,
                "Log that a credential is set, never its value."),
            CodeRule::ShellInjection => ("QC008", "Shell command from non-constant input", "CWE-78", Severity::High,
                "Run the program with an argument list and no shell (subprocess.run([...]), execFile, exec.Command(prog, args...)), and validate what the arguments may be."),
            CodeRule::DeclaredReadWrites => ("QC101", "Declared read, code writes", "CWE-1068", Severity::High,
                "Declare the tool `effect: write` (so the tool check confirms it), or remove the write from its code."),
            CodeRule::UrlFromArgument => ("QC102", "URL from an argument, not declared sends_out", "CWE-918", Severity::High,
                "Declare the tool `sends_out: true` and the argument's kind `url` or `destination`, or fix the host in the code."),
            CodeRule::UntrustedUndeclared => ("QC103", "Fetched content returned, not declared untrusted", "CWE-1068", Severity::High,
                "Declare the tool `returns: untrusted`, so what it returns carries the external mark."),
            CodeRule::ProcessFromArgument => ("QC104", "Process from an argument without a code/shell kind", "CWE-78", Severity::High,
                "Declare the argument's kind `shell` or `code` in `arg_kinds` (so QG017 applies), or stop passing it to the process."),
            CodeRule::ArgumentInjection => ("QC105", "Argument can start an option of a fixed program", "CWE-88", Severity::Medium,
                "Put a `--` element before the arguments' elements (`[\"tool\", \"export\", \"--\", month]`), so the program reads them as operands, or glue each to its option (`--month=` + month); or refuse values that start with `-`."),
        };
        CodeRuleInfo {
            id,
            title,
            cwe,
            severity,
            fails_gate: true,
            fix,
        }
    }

    /// The id.
    pub fn id(self) -> &'static str {
        self.info().id
    }

    /// The rule of an id (`QC001`).
    pub fn from_id(id: &str) -> Option<CodeRule> {
        CodeRule::ALL.into_iter().find(|r| r.id() == id)
    }
}

impl std::fmt::Display for CodeRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// The rule set's hash: the first 12 hex digits of the SHA-256 of [`RULESET_VERSION`] and every
/// record.
pub fn rules_hash() -> String {
    let mut h = Sha256::new();
    h.update(RULESET_VERSION.as_bytes());
    for r in CodeRule::ALL {
        let i = r.info();
        for field in [i.id, i.title, i.cwe, i.severity.name(), i.fix] {
            h.update(field.as_bytes());
            h.update([0u8]);
        }
        h.update([i.fails_gate as u8]);
    }
    hex::encode(h.finalize())[..12].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_distinct_and_round_trip_and_the_hash_is_twelve_hex() {
        let ids: std::collections::BTreeSet<_> = CodeRule::ALL.iter().map(|r| r.id()).collect();
        assert_eq!(ids.len(), CodeRule::ALL.len());
        for r in CodeRule::ALL {
            assert_eq!(CodeRule::from_id(r.id()), Some(r));
            assert!(r.info().cwe.starts_with("CWE-"));
        }
        let h = rules_hash();
        assert_eq!(h.len(), 12);
        assert!(h.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(h, rules_hash());
    }
}
