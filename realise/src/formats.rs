//! `format` where the validator asserts it (drafts 4–7): a sufficient shape per format — strings
//! of that shape are instances (the runtime's validator checks each value built again) — and,
//! where the validator's code makes one certain, a necessary shape — every instance has it
//! (read off `jsonschema` 0.33's `keywords/format.rs`: a date is ten ASCII characters
//! `dddd-dd-dd`, a date-time starts with one and a `T`, an e-mail address has an `@`, a URI a
//! scheme, a UUID is hyphenated hex, an IP address only digits, dots and colons, a host name only
//! letters, digits, dots and hyphens).

/// The formats the validator asserts.
pub(crate) fn asserted(f: &str) -> bool {
    matches!(
        f,
        "date"
            | "date-time"
            | "time"
            | "email"
            | "idn-email"
            | "hostname"
            | "idn-hostname"
            | "ipv4"
            | "ipv6"
            | "uri"
            | "uri-reference"
            | "iri"
            | "iri-reference"
            | "uuid"
            | "regex"
            | "json-pointer"
            | "relative-json-pointer"
            | "uri-template"
            | "duration"
    )
}

/// A regular expression (matching the whole string) that every instance of format `f` matches,
/// or `None` where none is certain.
pub(crate) fn necessary(f: &str) -> Option<String> {
    let p = match f {
        "date" => r"[0-9]{4}-[0-9]{2}-[0-9]{2}",
        "date-time" => r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt](?s:.*)",
        "email" | "idn-email" => r"(?s:.*)@(?s:.*)",
        "uri" | "iri" => r"[A-Za-z][A-Za-z0-9+.\-]*:(?s:.*)",
        "uuid" => r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}",
        "ipv4" => r"[0-9.]+",
        "ipv6" => r"[0-9A-Fa-f:.]+",
        "hostname" => r"[A-Za-z0-9.\-]+",
        _ => return None,
    };
    Some(format!("^(?:{p})$"))
}

/// A regular expression (matching the whole string) whose strings are all instances of format
/// `f` (ASCII shapes a person would recognise), or `None` where none is given.
pub(crate) fn sufficient(f: &str) -> Option<String> {
    let p = match f {
        "date" => r"20[0-9]{2}-0[1-9]-(0[1-9]|1[0-9]|2[0-8])",
        "date-time" => {
            r"20[0-9]{2}-0[1-9]-(0[1-9]|1[0-9]|2[0-8])T(0[0-9]|1[0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z"
        }
        "time" => r"(0[0-9]|1[0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z",
        "email" | "idn-email" => r"[a-z]{1,12}@[a-z]{1,12}(\.(com|org|net))?",
        "hostname" | "idn-hostname" => r"[a-z]{1,12}(\.[a-z]{1,12}){0,2}",
        "ipv4" => r"(1[0-9]|[1-9])\.(1[0-9]|[0-9])\.(1[0-9]|[0-9])\.(1[0-9]|[1-9])",
        "ipv6" => r"(2001:db8::)(1[0-9a-f]{0,3}|[1-9a-f])",
        "uri" | "iri" => {
            r"https://[a-z]{1,12}\.(com|org|net)(/[a-z0-9]{0,12})?|urn:[a-z]{1,8}:[a-z0-9]{1,12}"
        }
        "uri-reference" | "iri-reference" => r"(https://[a-z]{1,12}\.com)?/[a-z0-9]{0,12}",
        "uuid" => r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
        "json-pointer" => r"(/[a-z0-9]{0,8}){0,3}",
        "duration" => r"P([1-9][0-9]{0,2}D|T[1-9][0-9]{0,2}[HMS])",
        "regex" => r"[a-z]{0,8}",
        _ => return None,
    };
    Some(format!("^(?:{p})$"))
}
