//! The source edits' tests: each edit applied, the checks re-run on the result, and the forms
//! no edit is offered for.

use super::*;
use crate::rules::CodeRule::{self, *};
use ir::catalogue::Catalogue;
use Language::*;

fn rules(lang: Language, text: &str) -> Vec<CodeRule> {
    crate::findings_of(lang, text, &Catalogue::default(), false)
        .into_iter()
        .map(|f| f.rule)
        .collect()
}

/// The edit is offered for `rule`, gives `want`, and the rule no longer fires on it.
fn fixes_to(rule: CodeRule, lang: Language, text: &str, want: &str) {
    assert!(
        rules(lang, text).contains(&rule),
        "{rule:?} fires on {text}"
    );
    let (out, fx) = fixed(lang, text);
    assert!(fx.iter().any(|f| f.rule == rule), "{rule:?}: {fx:?}");
    assert_eq!(out, want);
    assert!(
        !rules(lang, &out).contains(&rule),
        "{rule:?} still fires on {out}"
    );
    let tree = lang::parse(lang, &out).unwrap();
    assert!(!tree.root_node().has_error(), "{out}");
}

/// The rule fires and no edit is offered for it.
fn not_offered(rule: CodeRule, lang: Language, text: &str) {
    let fx = fixes(lang, text);
    assert!(!fx.iter().any(|f| f.rule == rule), "{rule:?}: {fx:?}");
}

#[test]
fn qc003_turns_verification_back_on() {
    fixes_to(
        TlsOff,
        Python,
        "import requests\nrequests.get(u, verify=False, timeout=5)\n",
        "import requests\nrequests.get(u, verify=True, timeout=5)\n",
    );
    fixes_to(
        TlsOff,
        Python,
        "import aiohttp\nasync def f(s):\n    await aiohttp.request('GET', u, ssl=False)\n",
        "import aiohttp\nasync def f(s):\n    await aiohttp.request('GET', u)\n",
    );
    fixes_to(
        TlsOff,
        Go,
        "package p\nvar c = &tls.Config{InsecureSkipVerify: true}\n",
        "package p\nvar c = &tls.Config{InsecureSkipVerify: false}\n",
    );
    fixes_to(
        TlsOff,
        TypeScript,
        "const agent = new https.Agent({ rejectUnauthorized: false });\n",
        "const agent = new https.Agent({ rejectUnauthorized: true });\n",
    );
    fixes_to(
        TlsOff,
        JavaScript,
        "const a = 1;\nprocess.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';\nconst b = 2;\n",
        "const a = 1;\nconst b = 2;\n",
    );
    // An unverified context has no edit here: check_hostname cannot be turned on while
    // verify_mode is CERT_NONE.
    not_offered(
        TlsOff,
        Python,
        "import ssl\nctx = ssl._create_unverified_context()\nctx.check_hostname = False\n",
    );
    not_offered(
        TlsOff,
        Python,
        "import requests\nrequests.get(u, verify=False, cert_reqs=ssl.CERT_NONE, timeout=5)\n",
    );
}

#[test]
fn qc004_moves_a_portless_url_to_https() {
    fixes_to(
        PlainHttp,
        JavaScript,
        "const API = \"http://api.acme-shop.com/v1\";\n",
        "const API = \"https://api.acme-shop.com/v1\";\n",
    );
    fixes_to(
        PlainHttp,
        Python,
        "BASE = f'http://api.shop.com/v1/{x}'\n",
        "BASE = f'https://api.shop.com/v1/{x}'\n",
    );
    fixes_to(
        PlainHttp,
        TypeScript,
        "await fetch(`http://api.shop.com/v1/orders/${id}`);\n",
        "await fetch(`https://api.shop.com/v1/orders/${id}`);\n",
    );
    fixes_to(
        PlainHttp,
        Go,
        "package p\nconst u = \"http://api.shop.com\"\n",
        "package p\nconst u = \"https://api.shop.com\"\n",
    );
    // A port says where a plain server listens: no edit.
    not_offered(PlainHttp, Python, "BASE = 'http://api.shop.com:8080/v1'\n");
    // A local address does not fire, so nothing is offered.
    assert!(fixes(Python, "BASE = 'http://localhost:8080'\n").is_empty());
}

#[test]
fn qc005_adds_a_timeout() {
    fixes_to(
        NoTimeout,
        Python,
        "import requests\nr = requests.get(f\"{API}/x\", headers=h)\n",
        "import requests\nr = requests.get(f\"{API}/x\", headers=h, timeout=30)\n",
    );
    fixes_to(
        NoTimeout,
        Python,
        "import httpx\nhttpx.get(url, timeout=None)\n",
        "import httpx\nhttpx.get(url, timeout=30)\n",
    );
    fixes_to(
        NoTimeout,
        JavaScript,
        "import axios from 'axios';\nawait axios.get(url);\nawait axios.post(url);\nawait axios.put(url, d, { headers: h });\n",
        "import axios from 'axios';\nawait axios.get(url, { timeout: 30000 });\nawait axios.post(url, undefined, { timeout: 30000 });\nawait axios.put(url, d, { timeout: 30000, headers: h });\n",
    );
    fixes_to(
        NoTimeout,
        Go,
        "package p\nimport (\n\t\"net/http\"\n\t\"time\"\n)\nvar c = &http.Client{Transport: t}\n",
        "package p\nimport (\n\t\"net/http\"\n\t\"time\"\n)\nvar c = &http.Client{Timeout: 30 * time.Second, Transport: t}\n",
    );
    // Without `time` imported the edit would not compile: not offered; nor for http.Get.
    not_offered(
        NoTimeout,
        Go,
        "package p\nimport \"net/http\"\nvar c = &http.Client{}\nfunc f() { http.Get(u) }\n",
    );
    // A config the code builds elsewhere is not edited.
    not_offered(
        NoTimeout,
        JavaScript,
        "import axios from 'axios';\nawait axios.get(url, cfg);\n",
    );
}

#[test]
fn qc008_gives_the_command_as_its_words() {
    fixes_to(
        ShellInjection,
        Python,
        "import subprocess\nsubprocess.run(f\"grep {order_id} orders.csv\", shell=True, capture_output=True, text=True)\n",
        "import subprocess\nsubprocess.run([\"grep\", \"--\", f\"{order_id}\", \"orders.csv\"], capture_output=True, text=True)\n",
    );
    fixes_to(
        ShellInjection,
        Python,
        "from subprocess import check_output\ncheck_output(f'ls -l --color=never {d}/x', shell=True)\n",
        "from subprocess import check_output\ncheck_output(['ls', '-l', '--color=never', '--', f'{d}/x'])\n",
    );
    // No `--` where it would change more than a value's reading: after an option name, before
    // a constant option, for an interpreter; a word with constant text first needs none.
    for (cmd, words) in [
        ("grep -e {q} x", "['grep', '-e', f'{q}', 'x']"),
        ("grep {q} -r x", "['grep', f'{q}', '-r', 'x']"),
        ("python3 tool.py {q}", "['python3', 'tool.py', f'{q}']"),
        ("tool --month={m}", "['tool', f'--month={m}']"),
    ] {
        fixes_to(
            ShellInjection,
            Python,
            &format!("import subprocess\nsubprocess.run(f'{cmd}', shell=True)\n"),
            &format!("import subprocess\nsubprocess.run({words})\n"),
        );
    }
    // Shell syntax in the command (a pipe, quotes, a glob), a builtin, or a command that
    // is not an f-string: no edit.
    for text in [
        "import subprocess\nsubprocess.run(f\"grep {q} x | wc -l\", shell=True)\n",
        "import subprocess\nsubprocess.run(f\"grep '{q}' x\", shell=True)\n",
        "import subprocess\nsubprocess.run(f\"ls {d}/*.csv\", shell=True)\n",
        "import subprocess\nsubprocess.run(f\"cd {d}\", shell=True)\n",
        "import subprocess\nsubprocess.run(\"ls \" + d, shell=True)\n",
        "import subprocess\nsubprocess.run(f\"{prog} x\", shell=True)\n",
        "import os\nos.system(f\"ls {d}\")\n",
    ] {
        not_offered(ShellInjection, Python, text);
    }
}

#[test]
fn a_fix_carries_its_findings_place() {
    let text = "import requests\n\nx = 1;   requests.get(u)\n";
    let f = crate::findings_of(Python, text, &Catalogue::default(), false);
    let fx = fixes(Python, text);
    assert_eq!((fx[0].line, fx[0].column), (f[0].line, f[0].column));
    assert_eq!(fx[0].rule, f[0].rule);
}

const OPENAI: &str = "sk-proj-Zk3LmP9qRt7WvX2yB5nC8dF1gH4jK6mN0pQ3rS5tU7vW9xY2zA";

/// [`fixes_to`], the edit's words name the variable (or the redaction), and the edited text is
/// offered nothing more for `rule` (the edit is idempotent).
fn moves_to(rule: CodeRule, lang: Language, text: &str, want: &str, says: &str) {
    fixes_to(rule, lang, text, want);
    let fx = fixes(lang, text);
    let f = fx.iter().find(|f| f.rule == rule).unwrap();
    assert!(f.what.contains(says), "{}", f.what);
    assert!(
        !fixes(lang, want).iter().any(|f| f.rule == rule),
        "{rule:?} offered again on {want}"
    );
}

/// The rule fires on `text` and no edit is offered for it.
fn fires_not_offered(rule: CodeRule, lang: Language, text: &str) {
    assert!(
        rules(lang, text).contains(&rule),
        "{rule:?} fires on {text}"
    );
    not_offered(rule, lang, text);
}

#[test]
fn qc001_moves_a_provider_key_to_its_providers_variable() {
    let says = "the secret read from the environment variable OPENAI_API_KEY; set it where the tool runs and rotate the leaked value (it stays in the history)";
    // The corpus's form: the key inside an f-string's braces keeps its own quotes.
    moves_to(
        ProviderKey,
        Python,
        &format!("import os\nh = {{\"Authorization\": f\"Bearer {{'{OPENAI}'}}\"}}\n"),
        "import os\nh = {\"Authorization\": f\"Bearer {os.environ['OPENAI_API_KEY']}\"}\n",
        says,
    );
    // A module without `import os` gets it as its first import.
    moves_to(
        ProviderKey,
        Python,
        &format!("\"\"\"Tools.\"\"\"\nimport requests\nclient = OpenAI(api_key=\"{OPENAI}\")\n"),
        "\"\"\"Tools.\"\"\"\nimport os\nimport requests\nclient = OpenAI(api_key=os.environ[\"OPENAI_API_KEY\"])\n",
        says,
    );
    // Part of a string: the string becomes an f-string (its braces doubled).
    moves_to(
        ProviderKey,
        Python,
        &format!("import os.path\nH = 'Bearer {OPENAI} {{x}}'\n"),
        "import os.path\nH = f'Bearer {os.environ[\"OPENAI_API_KEY\"]} {{x}}'\n",
        says,
    );
    moves_to(
        ProviderKey,
        JavaScript,
        "const aws = 'AKIAZ7VRSQ3TPLKW4M2N';\n",
        "const aws = process.env.AWS_ACCESS_KEY_ID;\n",
        "AWS_ACCESS_KEY_ID",
    );
    moves_to(
        ProviderKey,
        TypeScript,
        &format!("const h = {{ authorization: \"Bearer {OPENAI}\" }};\n"),
        "const h = { authorization: `Bearer ${process.env.OPENAI_API_KEY}` };\n",
        says,
    );
    moves_to(
        ProviderKey,
        Go,
        "package p\nimport \"os\"\nvar t = \"ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tV9wX1yZ3bC5\"\n",
        "package p\nimport \"os\"\nvar t = os.Getenv(\"GITHUB_TOKEN\")\n",
        "GITHUB_TOKEN",
    );
    // Go without `import "os"`, a Go `const` (no call there), bytes, an object's key, a JSX
    // attribute (the guard: the edited text would not parse) and a key inside an f-string's
    // braces that is part of a string: no edit.
    for (lang, text) in [
        (
            Go,
            "package p\nvar t = \"ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tV9wX1yZ3bC5\"\n".to_string(),
        ),
        (
            Go,
            "package p\nimport \"os\"\nconst t = \"ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tV9wX1yZ3bC5\"\n"
                .to_string(),
        ),
        (Python, format!("import os\nK = b'{OPENAI}'\n")),
        (
            JavaScript,
            "const m = { 'AKIAZ7VRSQ3TPLKW4M2N': 1 };\n".to_string(),
        ),
        (
            Tsx,
            "const a = <a title=\"AKIAZ7VRSQ3TPLKW4M2N\" />;\n".to_string(),
        ),
        (
            Python,
            format!("import os\nh = f\"{{'Bearer {OPENAI}'}}\"\n"),
        ),
    ] {
        fires_not_offered(ProviderKey, lang, &text);
    }
}

#[test]
fn qc002_moves_a_secret_to_the_variable_its_name_says() {
    moves_to(
        SecretLiteral,
        TypeScript,
        "const clientSecret = \"Zk3L-mP9q_Rt7WvX2yB5\";\nconst KEY = clientSecret;\n",
        "const clientSecret = process.env.CLIENT_SECRET;\nconst KEY = clientSecret;\n",
        "the secret read from the environment variable CLIENT_SECRET; set it where the tool runs",
    );
    moves_to(
        SecretLiteral,
        Python,
        "#!/usr/bin/env python\nDB_PASSWORD = 'Zk3L-mP9q_Rt7WvX2yB5'\nimport requests\n",
        "#!/usr/bin/env python\nimport os\nDB_PASSWORD = os.environ['DB_PASSWORD']\nimport requests\n",
        "DB_PASSWORD",
    );
    moves_to(
        SecretLiteral,
        JavaScript,
        "const cfg = { clientSecret: 'Zk3L-mP9q_Rt7WvX2yB5' };\n",
        "const cfg = { clientSecret: process.env.CLIENT_SECRET };\n",
        "CLIENT_SECRET",
    );
    moves_to(
        SecretLiteral,
        Go,
        "package p\nimport \"os\"\nvar c = Config{ClientSecret: \"Zk3L-mP9q_Rt7WvX2yB5\"}\n",
        "package p\nimport \"os\"\nvar c = Config{ClientSecret: os.Getenv(\"CLIENT_SECRET\")}\n",
        "CLIENT_SECRET",
    );
    // A value that is not one plain literal (a concatenation; two names bound at once): no edit.
    fires_not_offered(
        SecretLiteral,
        Python,
        "import os\npassword = 'Zk3L-mP9q' 'Rt7WvX2yB5'\n",
    );
}

#[test]
fn qc006_moves_only_the_password_of_a_url() {
    moves_to(
        UrlCredentials,
        Python,
        "import os\nAPI = \"https://shop:Zk3LmP9qRt7W@api.acme-shop.com/v1/{x}\"\n",
        "import os\nAPI = f\"https://shop:{os.environ['API_ACME_SHOP_COM_PASSWORD']}@api.acme-shop.com/v1/{{x}}\"\n",
        "the secret read from the environment variable API_ACME_SHOP_COM_PASSWORD",
    );
    moves_to(
        UrlCredentials,
        Python,
        "import os\nDB = f'postgres://admin:Zk3LmP9q@db.shop.com/{name}'\n",
        "import os\nDB = f'postgres://admin:{os.environ[\"DB_SHOP_COM_PASSWORD\"]}@db.shop.com/{name}'\n",
        "DB_SHOP_COM_PASSWORD",
    );
    moves_to(
        UrlCredentials,
        JavaScript,
        "fetch('https://bob:Zk3LmP9q@api.shop.com/x');\n",
        "fetch(`https://bob:${process.env.API_SHOP_COM_PASSWORD}@api.shop.com/x`);\n",
        "API_SHOP_COM_PASSWORD",
    );
    moves_to(
        UrlCredentials,
        TypeScript,
        "await fetch(`https://bob:Zk3LmP9q@api.shop.com/${p}`);\n",
        "await fetch(`https://bob:${process.env.API_SHOP_COM_PASSWORD}@api.shop.com/${p}`);\n",
        "API_SHOP_COM_PASSWORD",
    );
    // Go (a concatenation would be needed), a string that holds `${` (a template would read
    // it) and a URL inside an f-string's braces: no edit.
    for (lang, text) in [
        (
            Go,
            "package p\nimport \"os\"\nvar u = \"https://bob:Zk3LmP9q@api.shop.com/x\"\n",
        ),
        (
            JavaScript,
            "fetch('https://bob:Zk3LmP9q@api.shop.com/${x}');\n",
        ),
        // A tagged template (its tag reads the values apart from the text).
        (
            JavaScript,
            "q(sql`https://bob:Zk3LmP9q@api.shop.com/${x}`);\n",
        ),
        (
            Python,
            "import os\nu = f\"{'https://bob:Zk3LmP9q@api.shop.com/x'}\"\n",
        ),
    ] {
        fires_not_offered(UrlCredentials, lang, text);
    }
}

#[test]
fn qc007_logs_that_the_credential_is_used_not_its_value() {
    moves_to(
        LoggedCredential,
        TypeScript,
        "const apiKey = process.env.SHOP_API_KEY;\nconsole.log(`using key ${apiKey}`);\n",
        "const apiKey = process.env.SHOP_API_KEY;\nconsole.log(`using key [redacted]`);\n",
        "`${apiKey}` → `[redacted]`",
    );
    moves_to(
        LoggedCredential,
        Python,
        "import logging\nlogging.info(f'using {api_key!r}')\nprint('token', self.access_token)\n",
        "import logging\nlogging.info(f'using [redacted]')\nprint('token', \"[redacted]\")\n",
        "[redacted]",
    );
    moves_to(
        LoggedCredential,
        Go,
        "package p\nfunc f() { log.Printf(\"pw %s\", cfg.Password) }\n",
        "package p\nfunc f() { log.Printf(\"pw %s\", \"[redacted]\") }\n",
        "`cfg.Password`",
    );
    moves_to(
        LoggedCredential,
        JavaScript,
        "console.log('key ' + config.apiKey);\n",
        "console.log('key ' + \"[redacted]\");\n",
        "`config.apiKey`",
    );
    // A credential read inside a call in the line (what the call makes of it is not known):
    // the guard finds the rule still firing, so no edit.
    fires_not_offered(
        LoggedCredential,
        TypeScript,
        "console.log(`key ${mask(apiKey)}`);\n",
    );
}

#[test]
fn qc105_puts_a_double_dash_before_the_first_value() {
    use ir::catalogue::{Effect, Tool};
    let mut c = Catalogue::default();
    let t = Tool::new("export_report", Effect::Write, ir::Loc::new("t.yaml", 1));
    c.tools.insert("export_report".into(), t);
    let qc105 = |lang: Language, text: &str| {
        crate::findings_of(lang, text, &c, false)
            .iter()
            .filter(|f| f.rule == ArgumentInjection)
            .count()
    };
    let py = |cmd: &str| {
        format!("import subprocess\n@mcp.tool()\ndef export_report(month: str):\n    subprocess.run({cmd}, check=True)\n")
    };
    let cases = [
        (Python, py("['report-tool', 'export', month]"), py("['report-tool', 'export', '--', month]")),
        (Python, py("[\"report-tool\", f\"{month}.csv\"]"), py("[\"report-tool\", \"--\", f\"{month}.csv\"]")),
        (
            TypeScript,
            "import { spawnPromise } from 'spawn-rx';\nserver.tool('export_report', {}, async ({ month }) => {\n  await spawnPromise(\"yt-dlp\", [\"--skip-download\", \"vtt\", month], { detached: true });\n});\n".to_string(),
            "import { spawnPromise } from 'spawn-rx';\nserver.tool('export_report', {}, async ({ month }) => {\n  await spawnPromise(\"yt-dlp\", [\"--skip-download\", \"vtt\", \"--\", month], { detached: true });\n});\n".to_string(),
        ),
    ];
    for (lang, before, after) in cases {
        assert_eq!(qc105(lang, &before), 1, "{before}");
        let (out, fx) = fixed(lang, &before);
        assert!(fx.iter().any(|f| f.rule == ArgumentInjection), "{fx:?}");
        assert_eq!(out, after);
        assert_eq!(qc105(lang, &out), 0, "{out}");
        assert!(!lang::parse(lang, &out).unwrap().root_node().has_error());
    }
    // Not offered: the value of an option name (issue 55's `--month month`), a constant
    // option after, an interpreter's argv, Go's variadic call.
    for text in [
        py("['report-tool', 'export', '--month', month]"),
        py("['report-tool', month, '--all']"),
        py("['python3', 'export.py', month]"),
    ] {
        assert_eq!(qc105(Python, &text), 1, "{text}");
        assert!(
            !fixes(Python, &text)
                .iter()
                .any(|f| f.rule == ArgumentInjection),
            "{text}"
        );
    }
    let go = "package p\nfunc main() { s.AddTool(mcp.NewTool(\"export_report\"), h) }\nfunc h(ctx context.Context, r mcp.CallToolRequest) {\n\tm := r.GetString(\"month\", \"\")\n\texec.Command(\"report-tool\", m).Run()\n}\n";
    assert_eq!(qc105(Go, go), 1);
    assert!(!fixes(Go, go).iter().any(|f| f.rule == ArgumentInjection));
}
