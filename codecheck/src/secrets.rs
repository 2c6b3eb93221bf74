//! What a credential and an endpoint look like: provider key formats (regular expressions over
//! a string literal's *content*, never over code), credential-like names, placeholders, hosts
//! that are this machine or its private network, and URLs with credentials in them.

use regex::Regex;
use std::ops::Range;
use std::sync::OnceLock;

/// Provider key formats: (provider, pattern over the whole literal or a word in it).
const KEY_FORMATS: &[(&str, &str)] = &[
    (
        "Anthropic",
        r"\bsk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_\-]{80,}",
    ),
    (
        "OpenAI",
        r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}T3BlbkFJ[A-Za-z0-9_\-]{20,}",
    ),
    ("OpenAI", r"\bsk-(?:proj-|svcacct-)[A-Za-z0-9_\-]{40,}"),
    ("OpenAI-style", r"^sk-[A-Za-z0-9]{32,}$"),
    ("AWS", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    ("GitHub", r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b"),
    ("GitHub", r"\bgithub_pat_[A-Za-z0-9_]{80,}"),
    ("Slack", r"\bxox[abposr]-[0-9A-Za-z\-]{10,}"),
    ("Google", r"\bAIza[0-9A-Za-z_\-]{35}\b"),
    ("GitLab", r"\bglpat-[0-9A-Za-z_\-]{20,}"),
    ("Stripe", r"\b(?:sk|rk)_live_[0-9A-Za-z]{20,}"),
    ("Hugging Face", r"\bhf_[A-Za-z]{34}\b"),
    (
        "private key",
        r"-----BEGIN (?:RSA |EC |OPENSSH |DSA |ENCRYPTED )?PRIVATE KEY-----",
    ),
];

/// Per provider of [`KEY_FORMATS`], the environment variable its SDKs and documentation read the
/// key from: the name a repair moves a leaked key to (`qls repair`, `fixes/secrets.rs`).
const PROVIDER_ENV: &[(&str, &str)] = &[
    ("Anthropic", "ANTHROPIC_API_KEY"),
    ("OpenAI", "OPENAI_API_KEY"),
    ("OpenAI-style", "OPENAI_API_KEY"),
    ("AWS", "AWS_ACCESS_KEY_ID"),
    ("GitHub", "GITHUB_TOKEN"),
    ("Slack", "SLACK_TOKEN"),
    ("Google", "GOOGLE_API_KEY"),
    ("GitLab", "GITLAB_TOKEN"),
    ("Stripe", "STRIPE_SECRET_KEY"),
    ("Hugging Face", "HF_TOKEN"),
    ("private key", "PRIVATE_KEY"),
];

/// The conventional environment variable of a provider [`provider_key`] names.
pub fn provider_env(provider: &str) -> Option<&'static str> {
    PROVIDER_ENV
        .iter()
        .find(|(p, _)| *p == provider)
        .map(|(_, v)| *v)
}

fn key_regexes() -> &'static [(&'static str, Regex)] {
    static R: OnceLock<Vec<(&'static str, Regex)>> = OnceLock::new();
    R.get_or_init(|| {
        KEY_FORMATS
            .iter()
            .map(|(p, r)| (*p, Regex::new(r).expect("a key format compiles")))
            .collect()
    })
}

/// The provider whose key format the literal holds, if one (examples and placeholders aside).
pub fn provider_key(text: &str) -> Option<&'static str> {
    provider_key_at(text).map(|(p, _)| p)
}

/// [`provider_key`], and the bytes of `text` the key is: the format's match, or the whole text
/// for a private key (its header is what matches; the key is the whole block).
pub fn provider_key_at(text: &str) -> Option<(&'static str, Range<usize>)> {
    if is_placeholder(text) {
        return None;
    }
    key_regexes().iter().find_map(|(p, r)| {
        let m = r.find(text).filter(|m| !is_placeholder(m.as_str()))?;
        let span = if *p == "private key" {
            0..text.len()
        } else {
            m.range()
        };
        Some((*p, span))
    })
}

/// Placeholder words: documentation keys, `xxxx`, `your-key-here`, `<token>`, `${VAR}`.
pub fn is_placeholder(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    const WORDS: &[&str] = &[
        "example",
        "xxxx",
        "****",
        "....",
        "your",
        "placeholder",
        "dummy",
        "changeme",
        "fake",
        "redacted",
        "test",
        "sample",
        "<",
        "${",
        "{{",
        "replace",
        "insert",
        "here",
        "todo",
        "12345",
        "abcdef",
        "...",
    ];
    WORDS.iter().any(|w| t.contains(w))
}

/// Whether an identifier names a credential (`api_key`, `password`, `clientSecret`,
/// `GITHUB_TOKEN`), by its words: `password`/`passwd`/`secret`/`credential(s)`/`apikey`, or
/// `key`/`token` after a word that makes them one (`api_key`, `access_token`); a bare `token` is
/// not (in model code it is a word piece), nor a name that only says where a credential is
/// (`…_url`, `…_env`, `…_name`, `…_path`, `…_file`, `…_header`, `…_field`).
pub fn credential_name(name: &str) -> bool {
    let words = words(name);
    let Some(lastw) = words.last() else {
        return false;
    };
    const NOT_VALUES: &[&str] = &[
        "url",
        "uri",
        "env",
        "name",
        "path",
        "file",
        "header",
        "field",
        "id",
        "type",
        "var",
        "prefix",
        "length",
        "len",
        "count",
        "endpoint",
        "param",
        "params",
        "label",
        "schema",
        "placeholder",
        "description",
        "format",
        "kind",
        "manager",
        "store",
        "provider",
        "dir",
        "ref",
        "refs",
        "hint",
        "policy",
        "mode",
        "input",
        "required",
        "enabled",
        "limit",
        "limits",
        "usage",
        "tokens",
        "expiry",
        "expires",
        "ttl",
        "scope",
        "scopes",
        "hash",
        "keys",
        "help",
        "message",
        "error",
        "pattern",
        "regex",
        "validator",
        "arn",
        "source",
        "location",
    ];
    if NOT_VALUES.contains(&lastw.as_str()) {
        return false;
    }
    let has = |w: &str| words.iter().any(|x| x == w);
    if has("password")
        || has("passwd")
        || has("secret")
        || has("apikey")
        || has("credentials")
        || has("credential")
    {
        return true;
    }
    let before = |w: &str| {
        words
            .iter()
            .position(|x| x == w)
            .filter(|&i| i > 0)
            .map(|i| words[i - 1].as_str())
    };
    const KEY_OWNERS: &[&str] = &[
        "api",
        "secret",
        "private",
        "access",
        "signing",
        "encryption",
        "auth",
        "master",
        "client",
    ];
    const TOKEN_OWNERS: &[&str] = &[
        "access", "refresh", "auth", "api", "bearer", "session", "bot", "github", "slack", "gh",
        "personal", "oauth", "id", "app", "hf", "npm", "pypi", "discord", "telegram",
    ];
    (lastw == "key" && before("key").is_some_and(|b| KEY_OWNERS.contains(&b)))
        || (lastw == "token" && before("token").is_some_and(|b| TOKEN_OWNERS.contains(&b)))
}

/// The environment variable a name's value is moved to: its words in SCREAMING_SNAKE_CASE
/// (`clientSecret` → `CLIENT_SECRET`, `self.db_password` → `DB_PASSWORD`); `None` when it has
/// no word or starts with a digit (not a variable name every language reads).
pub fn env_name(name: &str) -> Option<String> {
    let words: Vec<String> = words(name)
        .into_iter()
        .map(|w| {
            w.chars()
                .filter(char::is_ascii_alphanumeric)
                .collect::<String>()
        })
        .filter(|w| !w.is_empty())
        .collect();
    let out = words.join("_").to_ascii_uppercase();
    out.starts_with(|c: char| c.is_ascii_alphabetic())
        .then_some(out)
}

/// An identifier's words, lower case (`clientSecret` → client, secret; `API_KEY` → api, key).
fn words(name: &str) -> Vec<String> {
    let name = name.rsplit(['.', '>']).next().unwrap_or(name);
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for ch in name.chars() {
        if ch == '_' || ch == '-' {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if ch.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = ch.is_lowercase() || ch.is_ascii_digit();
        cur.extend(ch.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Whether a literal looks like a secret value rather than a word, a name, a path or a
/// sentence: at least 12 characters, no spaces, not a URL, not a placeholder, and at least three
/// of lower case, upper case, digits and symbols, or long and random-looking.
pub fn secret_looking(text: &str) -> bool {
    let t = text.trim();
    if t.len() < 12 || t.contains(char::is_whitespace) || t.contains("://") || is_placeholder(t) {
        return false;
    }
    // A name (`OPENAI_API_KEY`), a dotted path or a file path says where a secret is.
    if t.chars()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        || t.starts_with('/')
        || t.starts_with("./")
    {
        return false;
    }
    let classes = [
        t.chars().any(|c| c.is_ascii_lowercase()),
        t.chars().any(|c| c.is_ascii_uppercase()),
        t.chars().any(|c| c.is_ascii_digit()),
        t.chars().any(|c| !c.is_ascii_alphanumeric()),
    ]
    .iter()
    .filter(|x| **x)
    .count();
    classes >= 3 || (t.len() >= 24 && classes >= 2 && entropy(t) >= 3.5)
}

/// Shannon entropy in bits per character.
fn entropy(t: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    for c in t.chars() {
        *counts.entry(c).or_insert(0usize) += 1;
    }
    let n = t.chars().count() as f64;
    counts
        .values()
        .map(|&k| {
            let p = k as f64 / n;
            -p * p.log2()
        })
        .sum()
}

/// A URL's host, when the text is a URL (`scheme://[user[:pass]@]host[:port]/…`).
pub fn url_host(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let auth = rest.split(['/', '?', '#']).next()?;
    let host_port = auth.rsplit('@').next()?;
    let host = if host_port.starts_with('[') {
        host_port
            .split(']')
            .next()
            .map(|h| h.trim_start_matches('['))?
    } else {
        host_port.split(':').next()?
    };
    Some(host)
}

/// Whether a host is this machine, its private network, or a name reserved for examples and
/// tests (RFC 2606/6761), so plain HTTP to it is not an exposure on the internet.
pub fn local_host(host: &str) -> bool {
    let h = host.to_ascii_lowercase();
    if h.is_empty() || h == "localhost" || h == "0.0.0.0" || h == "::1" || h == "::" {
        return true;
    }
    let suffixes = [
        ".localhost",
        ".local",
        ".internal",
        ".test",
        ".example",
        ".invalid",
        ".lan",
        ".home.arpa",
    ];
    if suffixes.iter().any(|s| h.ends_with(s)) || h == "host.docker.internal" {
        return true;
    }
    if ["example.com", "example.org", "example.net"]
        .iter()
        .any(|e| h == *e || h.ends_with(&format!(".{e}")))
    {
        return true;
    }
    // No dot: a service name on a private network (`http://api:8080`, `http://ollama:11434`).
    if !h.contains('.') && !h.contains(':') {
        return true;
    }
    if let Ok(ip) = h.parse::<std::net::Ipv4Addr>() {
        return ip.is_loopback() || ip.is_private() || ip.is_link_local() || ip.is_unspecified();
    }
    false
}

/// Hosts whose `http://` URLs are names, not endpoints (XML namespaces, JSON Schema ids,
/// licence texts).
pub fn namespace_host(host: &str) -> bool {
    const HOSTS: &[&str] = &[
        "www.w3.org",
        "w3.org",
        "json-schema.org",
        "schemas.xmlsoap.org",
        "schemas.microsoft.com",
        "purl.org",
        "xmlns.com",
        "ns.adobe.com",
        "www.apache.org",
        "opensource.org",
        "www.opensource.org",
        "schemas.openxmlformats.org",
        "docs.oasis-open.org",
        "xml.org",
        "www.xml.org",
        "relaxng.org",
        "www.gnu.org",
        "schema.org",
    ];
    HOSTS.contains(&host.to_ascii_lowercase().as_str())
}

/// Whether a URL carries a password in its user part (`https://user:pass@host`), a
/// placeholder password aside.
pub fn url_with_password(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once("://") else {
        return false;
    };
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
    {
        return false;
    }
    let auth = rest.split(['/', '?', '#']).next().unwrap_or("");
    let Some((user, host)) = auth.rsplit_once('@') else {
        return false;
    };
    // A URL to this machine or its private network (a development database's default login)
    // never sends its credentials over the internet.
    let with_scheme = format!("x://{host}");
    if local_host(url_host(&with_scheme).unwrap_or(host)) {
        return false;
    }
    match user.split_once(':') {
        Some((_, pass)) => {
            !pass.is_empty()
                && !is_placeholder(pass)
                && !["password", "pass", "pwd", "secret", "user", "username"]
                    .contains(&pass.to_ascii_lowercase().as_str())
        }
        None => false,
    }
}

/// The bytes of `url` its password is (`https://user:` *pass* `@host/…`), when it has one:
/// the part [`url_with_password`] reads.
pub fn url_password_at(url: &str) -> Option<Range<usize>> {
    let (_, rest) = url.split_once("://")?;
    let rest_at = url.len() - rest.len();
    let auth = rest.split(['/', '?', '#']).next()?;
    let (user, _) = auth.rsplit_once('@')?;
    let (name, pass) = user.split_once(':')?;
    let start = rest_at + name.len() + 1;
    (!pass.is_empty()).then_some(start..start + pass.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_formats() {
        assert_eq!(provider_key("AKIAZ7VRSQ3TPLKW4M2N"), Some("AWS"));
        assert_eq!(provider_key("AKIAIOSFODNN7EXAMPLE"), None);
        assert_eq!(
            provider_key(&format!("ghp_{}", "aB3dE5fG7hJ9kL1mN3pQ5rS7tV9wX1yZ3bC5")),
            Some("GitHub")
        );
        assert_eq!(provider_key("xoxb-2934871-29348712-aZ9qLmT"), Some("Slack"));
        assert_eq!(
            provider_key("sk-proj-Zk3LmP9qRt7WvX2yB5nC8dF1gH4jK6mN0pQ3rS5tU7vW9xY2zA"),
            Some("OpenAI")
        );
        assert_eq!(provider_key("sk-..."), None);
        assert_eq!(provider_key("your-api-key"), None);
        assert_eq!(provider_key("skip-this"), None);
    }

    #[test]
    fn every_provider_has_its_environment_variable() {
        for (p, _) in KEY_FORMATS {
            assert!(provider_env(p).is_some(), "{p}");
        }
        let key = "sk-proj-Zk3LmP9qRt7WvX2yB5nC8dF1gH4jK6mN0pQ3rS5tU7vW9xY2zA";
        let text = format!("Bearer {key}");
        assert_eq!(provider_key_at(&text), Some(("OpenAI", 7..text.len())));
        assert_eq!(provider_env("OpenAI"), Some("OPENAI_API_KEY"));
    }

    #[test]
    fn names_become_environment_variables() {
        assert_eq!(env_name("clientSecret").as_deref(), Some("CLIENT_SECRET"));
        assert_eq!(env_name("self.db_password").as_deref(), Some("DB_PASSWORD"));
        assert_eq!(env_name("API_KEY").as_deref(), Some("API_KEY"));
        assert_eq!(env_name("x-api-key").as_deref(), Some("X_API_KEY"));
        assert_eq!(env_name("2fa_secret"), None);
        assert_eq!(env_name("__"), None);
        let u = "https://shop:Zk3LmP9qRt7W@api.acme-shop.com/v1";
        assert_eq!(&u[url_password_at(u).unwrap()], "Zk3LmP9qRt7W");
        assert_eq!(url_password_at("https://shop@api.acme-shop.com/v1"), None);
    }

    #[test]
    fn credential_names() {
        for yes in [
            "api_key",
            "API_KEY",
            "password",
            "clientSecret",
            "GITHUB_TOKEN",
            "access_token",
            "db_passwd",
            "openai_api_key",
            "secret",
        ] {
            assert!(credential_name(yes), "{yes}");
        }
        for no in [
            "token",
            "max_tokens",
            "api_key_env",
            "password_field",
            "secret_name",
            "key",
            "monkey",
            "token_url",
            "tokenizer",
            "input_tokens",
            "primary_key",
        ] {
            assert!(!credential_name(no), "{no}");
        }
    }

    #[test]
    fn secret_values() {
        assert!(secret_looking("Zk3L-mP9q_Rt7WvX2yB5"));
        assert!(!secret_looking("OPENAI_API_KEY"));
        assert!(!secret_looking("hunter2"));
        assert!(!secret_looking("please set the key"));
        assert!(!secret_looking("your-secret-here-123"));
        assert!(!secret_looking("https://api.example.com/x"));
    }

    #[test]
    fn hosts_and_urls() {
        assert_eq!(
            url_host("http://user:pw@api.shop.com:8080/x"),
            Some("api.shop.com")
        );
        assert!(local_host("localhost") && local_host("127.0.0.1") && local_host("10.1.2.3"));
        assert!(local_host("ollama") && local_host("api.example.com"));
        assert!(!local_host("api.shop.com") && !local_host("8.8.8.8"));
        assert!(url_with_password("https://bob:Zk3LmP9q@api.shop.com/"));
        assert!(!url_with_password("https://bob@api.shop.com/"));
        assert!(!url_with_password("postgres://user:password@localhost/db"));
        assert!(!url_with_password(
            "postgresql://postgres:postgres@localhost:54320/memory_db"
        ));
        assert!(namespace_host("www.w3.org"));
    }
}
