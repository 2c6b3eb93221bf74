//! The code rules QC001–QC008 over one file's [`Unit`]: credentials in source, TLS verification
//! turned off, plain-HTTP endpoints, requests without a timeout, credentials in URLs and logs,
//! and shell commands built from non-constant input. What each language's rule covers is in
//! `docs/code-checks.md`.

use crate::effects::{Action, FileCtx};
use crate::model::{last, root, Val};
use crate::rules::CodeRule;
use crate::secrets;
use crate::Hit;
use ir::code::Language;

/// Every code-rule hit in one file.
pub fn run(cx: &FileCtx) -> Vec<Hit> {
    let mut out = Vec::new();
    credentials(cx, &mut out);
    tls(cx, &mut out);
    plain_http(cx, &mut out);
    timeouts(cx, &mut out);
    logged(cx, &mut out);
    shell(cx, &mut out);
    out
}

/// QC001 (a provider key in any literal), QC002 (a secret-looking literal bound to a
/// credential-like name: an assignment, a keyword argument, a dict or object entry, a struct
/// field) and QC006 (a literal URL with a password in it).
fn credentials(cx: &FileCtx, out: &mut Vec<Hit>) {
    let u = cx.unit;
    let mut keyed = std::collections::BTreeSet::new();
    for l in &u.literals {
        if let Some(p) = secrets::provider_key(&l.text) {
            keyed.insert(l.at.byte);
            out.push(Hit::new(
                CodeRule::ProviderKey,
                l.at,
                format!("a literal holds what has the format of a {p} key"),
            ));
        } else if !l.prose && secrets::url_with_password(l.text.trim()) {
            out.push(Hit::new(
                CodeRule::UrlCredentials,
                l.at,
                "a URL carries a user name and password".to_string(),
            ));
        }
    }
    let named = u
        .assigns
        .iter()
        .flat_map(|a| a.targets.iter().map(move |t| (t.as_str(), &a.value, a.at)))
        .chain(u.pairs.iter().map(|p| (p.key.as_str(), &p.value, p.at)));
    for (name, value, at) in named {
        let Val::Str(s) = value else { continue };
        if !secrets::credential_name(name)
            || !secrets::secret_looking(s)
            || secrets::provider_key(s).is_some()
        {
            continue;
        }
        out.push(Hit::new(
            CodeRule::SecretLiteral,
            at,
            format!(
                "'{}' is set to a literal that looks like a secret",
                last(name)
            ),
        ));
    }
}

/// QC003: TLS certificate verification turned off.
fn tls(cx: &FileCtx, out: &mut Vec<Hit>) {
    let u = cx.unit;
    let is_false = |v: &Val| *v == Val::Bool(false);
    match cx.lang {
        Language::Python => {
            for c in &u.calls {
                let lower = c.callee.to_ascii_lowercase();
                if c.kwarg("verify").is_some_and(is_false)
                    && !lower.contains("jwt")
                    && !lower.contains("decode")
                {
                    out.push(Hit::new(
                        CodeRule::TlsOff,
                        c.at,
                        format!("`verify=False` on {}", c.callee),
                    ));
                }
                if c.kwarg("ssl").is_some_and(is_false)
                    && (root(&c.callee) == "aiohttp"
                        || cx.client_of(&c.callee).is_some_and(|(l, _)| l == "aiohttp"))
                {
                    out.push(Hit::new(
                        CodeRule::TlsOff,
                        c.at,
                        format!("`ssl=False` on {}", c.callee),
                    ));
                }
                if c.kwarg("cert_reqs").is_some_and(cert_none) {
                    out.push(Hit::new(
                        CodeRule::TlsOff,
                        c.at,
                        format!("`cert_reqs=CERT_NONE` on {}", c.callee),
                    ));
                }
                if last(&c.callee) == "_create_unverified_context" {
                    out.push(Hit::new(
                        CodeRule::TlsOff,
                        c.at,
                        "an unverified SSL context is created".into(),
                    ));
                }
            }
            for a in &u.assigns {
                for t in &a.targets {
                    let hit = (last(t) == "check_hostname" && is_false(&a.value))
                        || (last(t) == "verify_mode" && cert_none(&a.value))
                        || (last(t) == "verify" && t.contains('.') && is_false(&a.value))
                        || (last(t) == "_create_default_https_context"
                            && matches!(&a.value, Val::Path(p) if last(p) == "_create_unverified_context"));
                    if hit {
                        out.push(Hit::new(
                            CodeRule::TlsOff,
                            a.at,
                            format!("`{t}` turns certificate verification off"),
                        ));
                    }
                }
            }
        }
        Language::Go => {
            for p in &u.pairs {
                if p.key == "InsecureSkipVerify" && p.value == Val::Bool(true) {
                    out.push(Hit::new(
                        CodeRule::TlsOff,
                        p.at,
                        "`InsecureSkipVerify: true`".into(),
                    ));
                }
            }
            for a in &u.assigns {
                if a.targets.iter().any(|t| last(t) == "InsecureSkipVerify")
                    && a.value == Val::Bool(true)
                {
                    out.push(Hit::new(
                        CodeRule::TlsOff,
                        a.at,
                        "`InsecureSkipVerify = true`".into(),
                    ));
                }
            }
        }
        _ => {
            for p in &u.pairs {
                if matches!(p.key.as_str(), "rejectUnauthorized" | "strictSSL")
                    && is_false(&p.value)
                {
                    out.push(Hit::new(
                        CodeRule::TlsOff,
                        p.at,
                        format!("`{}: false`", p.key),
                    ));
                }
            }
            for a in &u.assigns {
                if a.targets
                    .iter()
                    .any(|t| last(t) == "NODE_TLS_REJECT_UNAUTHORIZED")
                    && matches!(&a.value, Val::Str(s) if s == "0")
                {
                    out.push(Hit::new(
                        CodeRule::TlsOff,
                        a.at,
                        "`NODE_TLS_REJECT_UNAUTHORIZED = \"0\"`".into(),
                    ));
                }
            }
        }
    }
}

fn cert_none(v: &Val) -> bool {
    matches!(v, Val::Path(p) if last(p) == "CERT_NONE")
        || matches!(v, Val::Str(s) if s == "CERT_NONE")
}

/// QC004: a literal `http://` URL whose host is neither local, private, reserved nor a
/// namespace name.
fn plain_http(cx: &FileCtx, out: &mut Vec<Hit>) {
    for l in cx.unit.literals.iter().filter(|l| !l.prose) {
        let Some(host) = plain_http_host(l.text.trim()) else {
            continue;
        };
        out.push(Hit::new(
            CodeRule::PlainHttp,
            l.at,
            format!("plain-HTTP endpoint `http://{host}`"),
        ));
    }
}

/// The host of a literal's trimmed text that QC004 fires on: an `http://` URL (no whitespace)
/// to a host that is neither local, private, reserved, a namespace name nor a placeholder. The
/// one predicate the rule and its source edit (`fixes/`) read.
pub(crate) fn plain_http_host(t: &str) -> Option<&str> {
    if !t
        .get(..7)
        .is_some_and(|p| p.eq_ignore_ascii_case("http://"))
        || t.contains(char::is_whitespace)
    {
        return None;
    }
    let host = secrets::url_host(t)?;
    let skip = host.is_empty()
        || secrets::local_host(host)
        || secrets::namespace_host(host)
        || host.contains(['{', '$', '<', '%']);
    (!skip).then_some(host)
}

/// QC005: Python's `requests` (module functions and sessions) without `timeout=` (or with
/// `timeout=None`), `httpx` with `timeout=None`, `urlopen` without a timeout; axios without
/// `timeout` (and an instance created without one); Go's `http.Get`/`Post`/`Head`/`PostForm`
/// and `http.DefaultClient` (no timeout), and an `http.Client{}` literal without `Timeout`.
fn timeouts(cx: &FileCtx, out: &mut Vec<Hit>) {
    for c in &cx.unit.calls {
        let found = match cx.lang {
            Language::Python => {
                let Some(Action::Request { .. }) = cx.action(c) else {
                    continue;
                };
                let lib = cx
                    .client_of(&c.callee)
                    .map(|(l, _)| l.as_str())
                    .unwrap_or(root(&c.callee));
                let client_timeout = cx.client_of(&c.callee).is_some_and(|(_, t)| *t);
                match c.kwarg("timeout") {
                    Some(Val::Null) => lib != "aiohttp",
                    Some(_) => false,
                    None => {
                        !c.spread
                            && !client_timeout
                            && matches!(lib, "requests" | "urllib" | "urllib2")
                            && c.args.len() < 3
                    }
                }
            }
            Language::Go => {
                (c.callee.matches('.').count() == 1
                    && matches!(
                        c.callee.as_str(),
                        "http.Get" | "http.Post" | "http.Head" | "http.PostForm"
                    ))
                    || c.callee.starts_with("http.DefaultClient.")
                    || (c.callee == "http.Client"
                        && c.args.first().is_some_and(|o| o.entry("Timeout").is_none()))
            }
            _ => {
                let axios = root(&c.callee) == "axios"
                    || cx.client_of(&c.callee).is_some_and(|(l, _)| l == "axios");
                let is_request = axios && matches!(cx.action(c), Some(Action::Request { .. }));
                let own = c.args.iter().any(|a| a.entry("timeout").is_some()) || c.spread;
                let inst = cx.client_of(&c.callee).is_some_and(|(_, t)| *t);
                is_request && !own && !inst
            }
        };
        if found {
            out.push(Hit::new(
                CodeRule::NoTimeout,
                c.at,
                format!("`{}` can wait for ever: no timeout is set", c.callee),
            ));
        }
    }
}

/// QC007: a log line (or a print) that reads a credential-like name.
fn logged(cx: &FileCtx, out: &mut Vec<Hit>) {
    for c in cx.unit.calls.iter().filter(|c| cx.logs(c)) {
        let names: Vec<String> = c
            .args
            .iter()
            .chain(c.kwargs.iter().map(|(_, v)| v))
            .flat_map(Val::paths)
            .collect();
        if let Some(n) = names.iter().find(|n| secrets::credential_name(n)) {
            out.push(Hit::new(
                CodeRule::LoggedCredential,
                c.at,
                format!("`{}` writes `{n}` to the log", c.callee),
            ));
        }
    }
}

/// QC008: a shell command that is not a constant (`shell=True` with a built or passed-in
/// command, `os.system(f"…")`, `child_process.exec(`…${x}`)`, `exec.Command("sh", "-c", x)`).
fn shell(cx: &FileCtx, out: &mut Vec<Hit>) {
    for c in &cx.unit.calls {
        if let Some(Action::Process {
            shell: true,
            command,
        }) = cx.action(c)
        {
            if command.iter().any(|v| !cx.constant(v)) || command.is_empty() && c.spread {
                out.push(Hit::new(
                    CodeRule::ShellInjection,
                    c.at,
                    format!("`{}` runs a shell command built at run time", c.callee),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::CodeRule::{self, *};
    use ir::catalogue::Catalogue;
    use ir::code::Language::{self, *};

    fn rules(lang: Language, text: &str) -> Vec<CodeRule> {
        crate::findings_of(lang, text, &Catalogue::default(), false)
            .into_iter()
            .map(|f| f.rule)
            .collect()
    }

    fn fires(rule: CodeRule, lang: Language, text: &str) {
        assert!(
            rules(lang, text).contains(&rule),
            "{rule:?} should fire on {lang:?}:\n{text}\n{:?}",
            rules(lang, text)
        );
    }

    fn quiet(rule: CodeRule, lang: Language, text: &str) {
        assert!(
            !rules(lang, text).contains(&rule),
            "{rule:?} should not fire on {lang:?}:\n{text}"
        );
    }

    #[test]
    fn qc001_provider_keys() {
        fires(ProviderKey, Python, "client = OpenAI(api_key='sk-proj-Zk3LmP9qRt7WvX2yB5nC8dF1gH4jK6mN0pQ3rS5tU7vW9xY2zA')\n");
        fires(
            ProviderKey,
            JavaScript,
            "const aws = 'AKIAZ7VRSQ3TPLKW4M2N';\n",
        );
        fires(
            ProviderKey,
            Go,
            "package p\nconst t = \"ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tV9wX1yZ3bC5\"\n",
        );
        quiet(
            ProviderKey,
            Python,
            "client = OpenAI(api_key=os.environ['OPENAI_API_KEY'])\n",
        );
        quiet(
            ProviderKey,
            TypeScript,
            "const k: string = process.env.AWS_KEY ?? 'AKIAIOSFODNN7EXAMPLE';\n",
        );
        // A comment is not code.
        quiet(ProviderKey, Python, "# AKIAZ7VRSQ3TPLKW4M2N\nx = 1\n");
    }

    #[test]
    fn qc002_secret_literals() {
        fires(
            SecretLiteral,
            Python,
            "DB_PASSWORD = 'Zk3L-mP9q_Rt7WvX2yB5'\n",
        );
        fires(
            SecretLiteral,
            JavaScript,
            "const cfg = { clientSecret: 'Zk3L-mP9q_Rt7WvX2yB5' };\n",
        );
        fires(
            SecretLiteral,
            Go,
            "package p\nvar c = Config{APIKey: \"Zk3L-mP9q_Rt7WvX2yB5\"}\n",
        );
        quiet(
            SecretLiteral,
            Python,
            "password = os.getenv('DB_PASSWORD')\napi_key_env = 'OPENAI_API_KEY'\n",
        );
        quiet(
            SecretLiteral,
            JavaScript,
            "const token = 'Zk3L-mP9q_Rt7WvX2yB5';\nconst password = 'your-password-here';\n",
        );
    }

    #[test]
    fn qc003_tls_off() {
        fires(
            TlsOff,
            Python,
            "import requests\nrequests.get(u, verify=False, timeout=5)\n",
        );
        fires(
            TlsOff,
            Python,
            "import ssl\nctx = ssl._create_unverified_context()\n",
        );
        fires(
            TlsOff,
            Python,
            "ctx.check_hostname = False\nctx.verify_mode = ssl.CERT_NONE\n",
        );
        fires(
            TlsOff,
            TypeScript,
            "const agent = new https.Agent({ rejectUnauthorized: false });\n",
        );
        fires(
            TlsOff,
            JavaScript,
            "process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';\n",
        );
        fires(
            TlsOff,
            Go,
            "package p\nvar c = &tls.Config{InsecureSkipVerify: true}\n",
        );
        quiet(
            TlsOff,
            Python,
            "requests.get(u, verify='/etc/ca.pem', timeout=5)\njwt.decode(t, verify=False)\n",
        );
        quiet(
            TlsOff,
            JavaScript,
            "const agent = new https.Agent({ rejectUnauthorized: true });\n",
        );
        quiet(
            TlsOff,
            Go,
            "package p\nvar c = &tls.Config{MinVersion: tls.VersionTLS12}\n",
        );
    }

    #[test]
    fn qc004_plain_http() {
        fires(PlainHttp, Python, "BASE = 'http://api.shop.com/v1'\n");
        fires(
            PlainHttp,
            TypeScript,
            "await fetch(`http://api.shop.com/v1/orders/${id}`);\n",
        );
        fires(
            PlainHttp,
            Go,
            "package p\nconst u = \"http://api.shop.com\"\n",
        );
        quiet(PlainHttp, Python, "BASE = 'http://localhost:8080'\nNS = 'http://www.w3.org/2000/svg'\nDOC = 'https://api.shop.com'\n");
        quiet(
            PlainHttp,
            Python,
            "def f():\n    \"\"\"See http://api.shop.com for the API.\"\"\"\n",
        );
        quiet(
            PlainHttp,
            JavaScript,
            "const u = 'http://127.0.0.1:3000'; const v = 'http://ollama:11434';\n",
        );
    }

    #[test]
    fn qc005_timeouts() {
        fires(
            NoTimeout,
            Python,
            "import requests\nr = requests.get(url)\n",
        );
        fires(
            NoTimeout,
            Python,
            "import requests\ns = requests.Session()\ns.post(url, json=b)\n",
        );
        fires(
            NoTimeout,
            Python,
            "import httpx\nhttpx.get(url, timeout=None)\n",
        );
        fires(
            NoTimeout,
            Python,
            "from urllib.request import urlopen\nurlopen(url)\n",
        );
        fires(
            NoTimeout,
            JavaScript,
            "import axios from 'axios';\nawait axios.get(url);\n",
        );
        fires(
            NoTimeout,
            Go,
            "package p\nimport \"net/http\"\nfunc f() { http.Get(u) }\n",
        );
        fires(
            NoTimeout,
            Go,
            "package p\nimport \"net/http\"\nvar c = &http.Client{}\n",
        );
        quiet(
            NoTimeout,
            Python,
            "import requests\nrequests.get(url, timeout=10)\nimport httpx\nhttpx.get(url)\n",
        );
        quiet(
            NoTimeout,
            Python,
            "import requests\nrequests.get(url, **opts)\n",
        );
        quiet(NoTimeout, JavaScript, "import axios from 'axios';\nconst api = axios.create({ timeout: 5000 });\nawait api.get(url);\nawait axios.get(url, { timeout: 1000 });\n");
        quiet(NoTimeout, Go, "package p\nimport \"net/http\"\nvar c = &http.Client{Timeout: 10 * time.Second}\nfunc f() { c.Get(u) }\n");
    }

    #[test]
    fn qc006_url_credentials() {
        fires(
            UrlCredentials,
            Python,
            "DB = 'postgres://admin:Zk3LmP9q@db.shop.com/orders'\n",
        );
        fires(
            UrlCredentials,
            JavaScript,
            "fetch('https://bob:Zk3LmP9q@api.shop.com/x');\n",
        );
        quiet(UrlCredentials, Python, "DB = 'postgres://admin@db.shop.com/orders'\nX = 'postgres://user:password@localhost/db'\n");
        quiet(
            UrlCredentials,
            Python,
            "DSN = 'postgresql://postgres:Zk3LmP9q@localhost:54320/memory_db'\n",
        );
    }

    #[test]
    fn qc007_logged_credentials() {
        fires(
            LoggedCredential,
            Python,
            "import logging\nlogging.info(f'using {api_key}')\n",
        );
        fires(
            LoggedCredential,
            Python,
            "print('token', self.access_token)\n",
        );
        fires(
            LoggedCredential,
            TypeScript,
            "console.log(`key=${config.apiKey}`);\n",
        );
        fires(
            LoggedCredential,
            Go,
            "package p\nfunc f() { log.Printf(\"pw %s\", cfg.Password) }\n",
        );
        quiet(LoggedCredential, Python, "import logging\nlogging.info('api key set: %s', bool(KEY_SET))\nprint(token)\nprint(max_tokens)\n");
        quiet(
            LoggedCredential,
            JavaScript,
            "console.log('the API key is missing');\n",
        );
        quiet(
            LoggedCredential,
            Python,
            "print('refs', state.secret_refs)\n",
        );
    }

    #[test]
    fn qc008_shell_commands() {
        fires(
            ShellInjection,
            Python,
            "import subprocess\nsubprocess.run(f'grep {q} x.txt', shell=True)\n",
        );
        fires(ShellInjection, Python, "import os\nos.system('ls ' + d)\n");
        fires(
            ShellInjection,
            JavaScript,
            "const { exec } = require('child_process');\nexec(`ls ${dir}`);\n",
        );
        fires(
            ShellInjection,
            TypeScript,
            "import { spawn } from 'node:child_process';\nspawn('sh', ['-c', cmd]);\n",
        );
        fires(
            ShellInjection,
            Go,
            "package p\nimport \"os/exec\"\nfunc f(x string) { exec.Command(\"sh\", \"-c\", x) }\n",
        );
        quiet(ShellInjection, Python, "import subprocess\nsubprocess.run(['grep', q, 'x.txt'])\nsubprocess.run('ls -l', shell=True)\nCMD = 'uptime'\nsubprocess.run(CMD, shell=True)\n");
        quiet(
            ShellInjection,
            JavaScript,
            "const { execFile } = require('child_process');\nexecFile('ls', [dir]);\n",
        );
        quiet(
            ShellInjection,
            Go,
            "package p\nimport \"os/exec\"\nfunc f(x string) { exec.Command(\"ls\", x) }\n",
        );
    }

    #[test]
    fn findings_carry_line_and_column() {
        let f = crate::findings_of(
            Python,
            "import requests\n\nx = 1;   requests.get(u)\n",
            &Catalogue::default(),
            false,
        );
        assert_eq!((f[0].line, f[0].column), (3, 10));
        assert_eq!(f[0].place(), "t:3:10");
    }
}
