//! Suppressions: findings a team accepted, each with a reason and optionally an expiry date
//! (`suppress:` in `agent.yaml`). A suppressed finding is still reported, under its own heading;
//! an unmatched or expired suppression is a lint; QG312 (the engines disagree) is never
//! suppressed. Matching and reporting live in the prover's report; this module only reads.

use crate::yaml::{as_map, as_seq};
use ir::diag::InputError;
use ir::loc::Loc;
use ir::suppress::{Date, Suppression};
use ir::vocab::RuleId;

/// Reads the `suppress:` list of `agent.yaml`.
pub fn read_suppressions(
    file: &str,
    node: &marked_yaml::Node,
) -> Result<Vec<Suppression>, InputError> {
    let mut out = Vec::new();
    for item in as_seq(file, node, "`suppress`")?.iter() {
        let m = as_map(file, item, "a `suppress` entry")?;
        m.check_keys(&["rule", "subject", "reason", "until"])?;
        let text = m.req_str("rule")?;
        let Some(rule) = RuleId::from_name(&text) else {
            let well_formed = text.len() == 5
                && text.starts_with("QG")
                && text[2..].chars().all(|c| c.is_ascii_digit());
            let why = if well_formed {
                format!(
                    "`rule: {text}` is no rule of this qls (QG001 to {}; docs/rules.md lists them)",
                    RuleId::ALL.last().map(|r| r.as_str()).unwrap_or("QG001")
                )
            } else {
                format!("`rule: {text}` is not a rule id such as `QG023`")
            };
            return Err(InputError::at(file, m.key_line("rule"), why));
        };
        if rule == RuleId::QG312 {
            return Err(InputError::at(
                file,
                m.key_line("rule"),
                "QG312 (the engines disagree, or a witness does not replay) cannot be suppressed: it is a fault of the prover, not of the agent",
            ));
        }
        let reason = m.req_str("reason")?;
        if reason.trim().is_empty() {
            return Err(InputError::at(
                file,
                m.key_line("reason"),
                "a suppression needs a reason: say why the team accepts this finding",
            ));
        }
        let until = match m.get("until") {
            None => None,
            Some(n) => {
                let text = crate::yaml::scalar_text(n);
                Some(Date::parse(&text).ok_or_else(|| {
                    InputError::at(
                        file,
                        m.key_line("until"),
                        format!("`until: {text}` is not a date written YYYY-MM-DD"),
                    )
                })?)
            }
        };
        out.push(Suppression {
            rule,
            subject: m.req_str("subject")?,
            reason,
            until,
            at: Loc::new(file, m.line()),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_read_and_compare() {
        let d = Date::parse("2027-03-01").expect("a date");
        assert_eq!(d.to_string(), "2027-03-01");
        assert!(Date::parse("2027-02-30").is_none());
        assert!(Date::parse("2024-02-29").is_some());
        assert!(Date::parse("2023-02-29").is_none());
        assert!(Date::parse("27-03-01").is_none());
        assert!(Date::parse("2027-3-1").is_none());
        assert!(d < Date::parse("2027-03-02").expect("a date"));
    }

    #[test]
    fn days_since_the_epoch_are_civil_dates() {
        assert_eq!(Date::from_days(0).to_string(), "1970-01-01");
        assert_eq!(Date::from_days(20_423).to_string(), "2025-12-01");
        assert_eq!(Date::from_days(11_016).to_string(), "2000-02-29");
    }

    #[test]
    fn a_suppression_needs_a_reason_and_a_real_rule() {
        let read = |text: &str| {
            let root =
                crate::yaml::load_yaml("agent.yaml", &format!("suppress:\n{text}")).expect("yaml");
            let top = as_map("agent.yaml", &root, "agent.yaml").expect("a map");
            read_suppressions("agent.yaml", top.get("suppress").expect("the list"))
        };
        let ok = read("- {rule: QG023, subject: \"cycle:m\", reason: \"bounded by the host\", until: 2027-03-01}\n")
            .expect("reads");
        assert_eq!(
            ok[0].until.map(|d| d.to_string()).as_deref(),
            Some("2027-03-01")
        );
        let e = read("- {rule: QG023, subject: x, reason: \" \"}\n").unwrap_err();
        assert!(e.message.contains("needs a reason"), "{}", e.message);
        let e = read("- {rule: QG312, subject: x, reason: y}\n").unwrap_err();
        assert!(e.message.contains("cannot be suppressed"), "{}", e.message);
        let e = read("- {rule: QG23, subject: x, reason: y}\n").unwrap_err();
        assert!(e.message.contains("not a rule id"), "{}", e.message);
        // Well formed, but no rule of this qls: refused at its line, never silently unmatched.
        let e = read("- {rule: QG099, subject: x, reason: y}\n").unwrap_err();
        assert!(
            e.message.contains("is no rule of this qls"),
            "{}",
            e.message
        );
        assert_eq!(e.line, 2);
        let e = read("- {rule: QG023, subject: x, reason: y, until: 2027-13-01}\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("YYYY-MM-DD"), "{}", e.message);
    }
}
