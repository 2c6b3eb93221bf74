//! Findings a team accepted: suppressions, each with a reason and optionally an expiry date
//! (`suppress:` in `agent.yaml`), and a baseline (`--baseline`, a previous `qls-findings/1`
//! report; `qls diff` compares two). A suppressed finding is still reported, under its own
//! heading; an unmatched or expired suppression is a lint; QG312 (the engines disagree) is never
//! suppressed. The readers read both; matching and reporting live in the prover's triage.

use crate::loc::Loc;
use crate::vocab::{RuleId, Severity};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One accepted finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suppression {
    /// The rule (`QG023`), read with `RuleId::read`: a suppression of no rule is an input
    /// error at its line.
    pub rule: RuleId,
    /// The finding's subject (`cycle:desk_model`, a tool name), as the report prints it.
    pub subject: String,
    /// Why the team accepts it (required: a suppression without a reason is refused).
    pub reason: String,
    /// The last day it holds (`YYYY-MM-DD`), if it expires.
    pub until: Option<Date>,
    /// Where it is written.
    pub at: Loc,
}

/// A previous `qls-findings/1` report, by fingerprint.
#[derive(Clone, Debug, Default)]
pub struct Baseline {
    /// Fingerprint → the finding.
    pub findings: BTreeMap<String, BaselineFinding>,
    /// Task name → its verdict (`possible`, `impossible`, …), for a report with tasks (SPEC §1.5).
    pub tasks: BTreeMap<String, String>,
}

/// One finding of a baseline or of a report being compared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaselineFinding {
    /// The rule, read with `RuleId::read` (a finding of no rule is an input error at its line).
    pub rule: RuleId,
    /// The subject.
    pub subject: String,
    /// Its severity, read back from the report's name (`Severity::from_name`).
    pub severity: Severity,
    /// The message.
    pub message: String,
    /// The locations as `file:line`.
    pub locations: Vec<String>,
}

/// A calendar day, compared as (year, month, day).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Date {
    /// The year.
    pub year: u32,
    /// The month, 1–12.
    pub month: u32,
    /// The day, 1–31.
    pub day: u32,
}

impl Date {
    /// Reads `YYYY-MM-DD`.
    pub fn parse(s: &str) -> Option<Date> {
        let mut it = s.split('-');
        let (y, m, d) = (it.next()?, it.next()?, it.next()?);
        if it.next().is_some() || y.len() != 4 || m.len() != 2 || d.len() != 2 {
            return None;
        }
        let date = Date {
            year: y.parse().ok()?,
            month: m.parse().ok()?,
            day: d.parse().ok()?,
        };
        let days = match date.month {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            2 if date.year.is_multiple_of(4)
                && (!date.year.is_multiple_of(100) || date.year.is_multiple_of(400)) =>
            {
                29
            }
            2 => 28,
            _ => return None,
        };
        (date.day >= 1 && date.day <= days).then_some(date)
    }

    /// The day a count of days since 1970-01-01 falls on (the civil-from-days algorithm).
    pub fn from_days(days: i64) -> Date {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = (yoe + era * 400 + i64::from(month <= 2)) as u32;
        Date { year, month, day }
    }

    /// Today (UTC), from the system clock.
    pub fn today() -> Date {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        Date::from_days(secs.div_euclid(86_400))
    }
}

impl std::fmt::Display for Date {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}
