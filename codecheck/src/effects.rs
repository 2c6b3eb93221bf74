//! What a call does, per language: an outbound request (its method and URL), a file write, a
//! SQL write, a process (with or without a shell, and its command), or a log line. The code
//! rules and the declarations check both read these; the tables here are the one place a
//! library's API is named.

use crate::model::{last, root, Call, Unit, Val};
use ir::code::Language;
use std::collections::{BTreeMap, BTreeSet};

/// What a call does.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// An outbound HTTP request.
    Request {
        /// `GET`, `POST`, … (`?` when the method is not a constant).
        method: String,
        /// The URL, when the call names one.
        url: Option<Val>,
    },
    /// A file written, created, moved or removed.
    FileWrite,
    /// A SQL statement that changes data or schema (`INSERT`, `UPDATE`, `DELETE`, …).
    SqlWrite(String),
    /// A process started.
    Process {
        /// Through a shell.
        shell: bool,
        /// The command: the shell's command line, or the program and its arguments.
        command: Vec<Val>,
    },
}

impl Action {
    /// Whether the action writes something outside the process (what `effect: read` denies).
    pub fn writes(&self) -> bool {
        match self {
            Action::Request { method, url } => {
                let asks = matches!(method.as_str(), "GET" | "HEAD" | "OPTIONS")
                    || (method == "POST" && url.as_ref().is_some_and(query_endpoint));
                !asks
            }
            Action::FileWrite | Action::SqlWrite(_) => true,
            Action::Process { .. } => false,
        }
    }

    /// The action in words.
    pub fn describe(&self) -> String {
        match self {
            Action::Request { method, .. } if method == "?" => {
                "sends an HTTP request whose method is not a constant".into()
            }
            Action::Request { method, .. } => format!("sends an HTTP {method}"),
            Action::FileWrite => "writes a file".into(),
            Action::SqlWrite(v) => format!("runs SQL {v}"),
            Action::Process { shell: true, .. } => "runs a shell command".into(),
            Action::Process { .. } => "starts a process".into(),
        }
    }
}

/// A URL whose path ends in a query endpoint (`…/search`, `…/_search`, `…/query`,
/// `…/completions`, `…/embeddings`, `…/lookup`, `…/find`): a POST there asks, it does not
/// change anything (search APIs take their query as a POST body).
fn query_endpoint(url: &Val) -> bool {
    let text = match url {
        Val::Str(s) => s.as_str(),
        Val::Built { text, .. } => text.as_str(),
        _ => return false,
    };
    let path = text.split(['?', '#']).next().unwrap_or("");
    let lastseg = path.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    matches!(
        lastseg,
        "search" | "_search" | "query" | "completions" | "embeddings" | "lookup" | "find"
    )
}

/// What one file's calls are read against: its language and the names bound to HTTP clients
/// (`s = requests.Session()`, `const api = axios.create({…})`, `c := &http.Client{…}`), each
/// with whether the client sets a timeout of its own.
pub struct FileCtx<'u> {
    /// The language.
    pub lang: Language,
    /// The file's unit.
    pub unit: &'u Unit,
    /// Client names (full paths, `self.client` included) → the client's library and whether
    /// it sets a timeout.
    pub clients: BTreeMap<String, (String, bool)>,
    /// Names bound once, to a constant string, in this file.
    pub constants: BTreeSet<String>,
}

/// Client constructors: (callee, library).
const PY_CLIENTS: &[(&str, &str)] = &[
    ("requests.Session", "requests"),
    ("requests.session", "requests"),
    ("httpx.Client", "httpx"),
    ("httpx.AsyncClient", "httpx"),
    ("aiohttp.ClientSession", "aiohttp"),
];
const HTTP_VERBS: &[&str] = &["get", "post", "put", "patch", "delete", "head", "options"];

impl<'u> FileCtx<'u> {
    /// Reads the file's client bindings and constants.
    pub fn new(lang: Language, unit: &'u Unit) -> FileCtx<'u> {
        let mut clients = BTreeMap::new();
        let mut assigned: BTreeMap<&str, usize> = BTreeMap::new();
        for a in &unit.assigns {
            for t in &a.targets {
                *assigned.entry(t.as_str()).or_default() += 1;
            }
            let Val::Call(c) = &a.value else { continue };
            let client = match lang {
                Language::Python => {
                    PY_CLIENTS
                        .iter()
                        .find(|(k, _)| *k == c.callee)
                        .map(|(_, lib)| {
                            (
                                lib.to_string(),
                                c.kwarg("timeout").is_some_and(|t| *t != Val::Null)
                                    || *lib != "requests",
                            )
                        })
                }
                Language::Go => (c.callee == "http.Client").then(|| {
                    let t = c.args.first().is_some_and(|o| o.entry("Timeout").is_some());
                    ("net/http".to_string(), t)
                }),
                _ => (c.callee == "axios.create").then(|| {
                    let t = c.args.first().is_some_and(|o| o.entry("timeout").is_some());
                    ("axios".to_string(), t)
                }),
            };
            if let Some(cl) = client {
                for t in &a.targets {
                    clients.insert(t.clone(), cl.clone());
                }
            }
        }
        let constants = unit
            .assigns
            .iter()
            .filter(|a| a.targets.len() == 1 && matches!(a.value, Val::Str(_)))
            .map(|a| a.targets[0].clone())
            .filter(|t| assigned.get(t.as_str()) == Some(&1))
            .collect();
        FileCtx {
            lang,
            unit,
            clients,
            constants,
        }
    }

    /// Whether a value is known when the code is written (a constant, or a name bound once to
    /// one in this file).
    pub fn constant(&self, v: &Val) -> bool {
        match v {
            Val::Path(p) => self.constants.contains(p),
            Val::Built { .. } => false,
            Val::List(xs) => xs.iter().all(|x| self.constant(x)),
            other => other.is_constant(),
        }
    }

    /// The client a method call is made on (`s.get` on `s = requests.Session()`).
    pub fn client_of(&self, callee: &str) -> Option<&(String, bool)> {
        let (obj, _) = callee.rsplit_once('.')?;
        self.clients.get(obj)
    }

    /// What a call does, if it is one of the calls the tables know.
    pub fn action(&self, c: &Call) -> Option<Action> {
        match self.lang {
            Language::Python => self.python(c),
            Language::Go => self.go(c),
            _ => self.js(c),
        }
        .or_else(|| sql_write(c))
    }

    fn python(&self, c: &Call) -> Option<Action> {
        let callee = c.callee.as_str();
        let lib = root(callee);
        let verb = last(callee);
        let on_client = self.client_of(callee).is_some();
        if (matches!(lib, "requests" | "httpx") && callee.matches('.').count() == 1) || on_client {
            let (method, url) = match verb {
                v if HTTP_VERBS.contains(&v) => {
                    (v.to_ascii_uppercase(), c.args.first().or(c.kwarg("url")))
                }
                "request" | "stream" => (
                    c.args
                        .first()
                        .or(c.kwarg("method"))
                        .and_then(Val::as_str)
                        .map(str::to_ascii_uppercase)
                        .unwrap_or_else(|| "?".into()),
                    c.args.get(1).or(c.kwarg("url")),
                ),
                _ => return None,
            };
            return Some(Action::Request {
                method,
                url: url.cloned(),
            });
        }
        match callee {
            "urllib.request.urlopen" | "urllib2.urlopen" => {
                let (url, method) = match c.args.first() {
                    Some(Val::Call(r)) if last(&r.callee) == "Request" => (
                        r.args.first().or(r.kwarg("url")).cloned(),
                        r.kwarg("method")
                            .and_then(Val::as_str)
                            .map(str::to_ascii_uppercase)
                            .unwrap_or_else(|| {
                                if r.kwarg("data").is_some() || r.args.len() > 1 {
                                    "POST".into()
                                } else {
                                    "GET".into()
                                }
                            }),
                    ),
                    other => (
                        other.cloned(),
                        if c.kwarg("data").is_some() || c.args.len() > 1 {
                            "POST".into()
                        } else {
                            "GET".into()
                        },
                    ),
                };
                Some(Action::Request { method, url })
            }
            "open" | "io.open" | "aiofiles.open" | "codecs.open" => {
                let mode = c
                    .args
                    .get(1)
                    .or(c.kwarg("mode"))
                    .and_then(Val::as_str)
                    .unwrap_or("r");
                mode.contains(['w', 'a', 'x', '+'])
                    .then_some(Action::FileWrite)
            }
            _ if matches!(verb, "write_text" | "write_bytes") => Some(Action::FileWrite),
            _ if lib == "os"
                && matches!(
                    verb,
                    "remove"
                        | "unlink"
                        | "rmdir"
                        | "removedirs"
                        | "rename"
                        | "renames"
                        | "replace"
                        | "makedirs"
                        | "mkdir"
                        | "truncate"
                ) =>
            {
                Some(Action::FileWrite)
            }
            _ if lib == "shutil"
                && matches!(
                    verb,
                    "rmtree" | "move" | "copy" | "copy2" | "copyfile" | "copytree"
                ) =>
            {
                Some(Action::FileWrite)
            }
            "subprocess.run"
            | "subprocess.call"
            | "subprocess.check_call"
            | "subprocess.check_output"
            | "subprocess.Popen" => {
                let cmd = c.args.first().or(c.kwarg("args"))?.clone();
                let shell = c
                    .kwarg("shell")
                    .is_some_and(|v| *v != Val::Bool(false) && *v != Val::Null);
                Some(process(shell, vec![cmd]))
            }
            "subprocess.getoutput"
            | "subprocess.getstatusoutput"
            | "os.system"
            | "os.popen"
            | "asyncio.create_subprocess_shell"
            | "commands.getoutput" => Some(Action::Process {
                shell: true,
                command: c.args.first().cloned().into_iter().collect(),
            }),
            "asyncio.create_subprocess_exec" => Some(process(false, c.args.clone())),
            _ if lib == "os" && (verb.starts_with("exec") || verb.starts_with("spawn")) => {
                Some(process(false, c.args.clone()))
            }
            _ => None,
        }
    }

    fn js(&self, c: &Call) -> Option<Action> {
        let callee = c.callee.as_str();
        let verb = last(callee);
        let lib = root(callee);
        let method_of = |o: Option<&Val>, default: &str| -> String {
            match o.and_then(|o| o.entry("method")) {
                Some(Val::Str(m)) => m.to_ascii_uppercase(),
                Some(_) => "?".into(),
                None => default.into(),
            }
        };
        if matches!(
            callee,
            "fetch"
                | "globalThis.fetch"
                | "window.fetch"
                | "node-fetch"
                | "undici.fetch"
                | "undici.request"
        ) {
            return Some(Action::Request {
                method: method_of(c.args.get(1), "GET"),
                url: c.args.first().cloned(),
            });
        }
        let axios = lib == "axios" || self.client_of(callee).is_some_and(|(l, _)| l == "axios");
        if axios || callee == "axios" {
            return match verb {
                v if HTTP_VERBS.contains(&v) => Some(Action::Request {
                    method: v.to_ascii_uppercase(),
                    url: c.args.first().cloned(),
                }),
                "axios" | "request" => {
                    let cfg = c.args.iter().find(|a| matches!(a, Val::Object(_)));
                    let url = c
                        .args
                        .first()
                        .filter(|a| !matches!(a, Val::Object(_)))
                        .cloned()
                        .or_else(|| cfg.and_then(|o| o.entry("url")).cloned());
                    Some(Action::Request {
                        method: method_of(cfg, "GET"),
                        url,
                    })
                }
                _ => None,
            };
        }
        if matches!(lib, "http" | "https")
            && matches!(verb, "get" | "request")
            && callee.matches('.').count() == 1
        {
            let opts = c.args.iter().find(|a| matches!(a, Val::Object(_)));
            let url = c
                .args
                .first()
                .filter(|a| !matches!(a, Val::Object(_)))
                .cloned();
            return Some(Action::Request {
                method: method_of(opts, "GET"),
                url,
            });
        }
        if lib == "fs"
            && matches!(
                verb.trim_end_matches("Sync"),
                "writeFile"
                    | "appendFile"
                    | "unlink"
                    | "rm"
                    | "rmdir"
                    | "mkdir"
                    | "rename"
                    | "copyFile"
                    | "createWriteStream"
                    | "truncate"
                    | "cp"
                    | "symlink"
            )
        {
            return Some(Action::FileWrite);
        }
        if lib == "child_process" {
            return match verb {
                "exec" | "execSync" => Some(Action::Process {
                    shell: true,
                    command: c.args.first().cloned().into_iter().collect(),
                }),
                "spawn" | "spawnSync" | "execFile" | "execFileSync" => Some(file_and_args(c)),
                _ => None,
            };
        }
        // spawn-rx and execa take the same (file, [args], options) as `execFile`, no shell
        // unless the options ask for one.
        let file_args = match lib {
            "spawn-rx" => matches!(
                verb,
                "spawn" | "spawnPromise" | "spawnDetached" | "spawnDetachedPromise"
            ),
            "execa" => matches!(verb, "execa" | "execaSync"),
            _ => false,
        };
        file_args.then(|| file_and_args(c))
    }

    fn go(&self, c: &Call) -> Option<Action> {
        let callee = c.callee.as_str();
        let verb = last(callee);
        let on_client =
            callee.starts_with("http.DefaultClient.") || self.client_of(callee).is_some();
        if callee.matches('.').count() == 1 && root(callee) == "http" || on_client {
            let method = match verb {
                "Get" => "GET",
                "Head" => "HEAD",
                "Post" | "PostForm" => "POST",
                "NewRequest" | "NewRequestWithContext" => {
                    let i = if verb == "NewRequest" { 0 } else { 1 };
                    let m = match c.args.get(i) {
                        Some(Val::Str(m)) => m.to_ascii_uppercase(),
                        Some(Val::Path(p)) if p.starts_with("http.Method") => {
                            p["http.Method".len()..].to_ascii_uppercase()
                        }
                        _ => "?".into(),
                    };
                    return Some(Action::Request {
                        method: m,
                        url: c.args.get(i + 1).cloned(),
                    });
                }
                _ => return None,
            };
            return Some(Action::Request {
                method: method.into(),
                url: c.args.first().cloned(),
            });
        }
        match callee {
            "os.WriteFile" | "os.Create" | "os.Remove" | "os.RemoveAll" | "os.Mkdir"
            | "os.MkdirAll" | "os.Rename" | "os.Truncate" | "ioutil.WriteFile" | "os.Symlink"
            | "os.Link" => Some(Action::FileWrite),
            "os.OpenFile" => {
                let flags = c.args.get(1).map(Val::paths).unwrap_or_default();
                flags
                    .iter()
                    .any(|f| {
                        ["O_WRONLY", "O_RDWR", "O_APPEND", "O_CREATE", "O_TRUNC"].contains(&last(f))
                    })
                    .then_some(Action::FileWrite)
            }
            "exec.Command" | "exec.CommandContext" => {
                let args = if verb == "CommandContext" {
                    c.args.get(1..).unwrap_or_default().to_vec()
                } else {
                    c.args.clone()
                };
                Some(process(false, args))
            }
            _ => None,
        }
    }

    /// Whether a call writes a log line (or prints).
    pub fn logs(&self, c: &Call) -> bool {
        let callee = c.callee.as_str();
        let verb = last(callee);
        let obj = callee
            .rsplit_once('.')
            .map(|(o, _)| last(o).to_ascii_lowercase())
            .unwrap_or_default();
        match self.lang {
            Language::Python => {
                callee == "print"
                    || (matches!(
                        verb,
                        "debug"
                            | "info"
                            | "warning"
                            | "warn"
                            | "error"
                            | "exception"
                            | "critical"
                            | "log"
                    ) && (obj.contains("log") || root(callee) == "logging"))
            }
            Language::Go => {
                matches!(root(callee), "log" | "slog") && callee.matches('.').count() == 1
                    || (callee.starts_with("fmt.Print"))
                    || (obj.contains("log")
                        && matches!(
                            verb,
                            "Print"
                                | "Printf"
                                | "Println"
                                | "Info"
                                | "Infof"
                                | "Debug"
                                | "Debugf"
                                | "Warn"
                                | "Warnf"
                                | "Error"
                                | "Errorf"
                        ))
            }
            _ => {
                (root(callee) == "console" && callee.matches('.').count() == 1)
                    || (obj.contains("log")
                        && matches!(
                            verb,
                            "debug" | "info" | "warn" | "error" | "log" | "trace" | "fatal"
                        ))
            }
        }
    }
}

/// A JavaScript `(file, [args], options)` call (`execFile`, `spawn`): the program and its
/// elements, through a shell when the options set `shell`.
fn file_and_args(c: &Call) -> Action {
    let shell = c
        .args
        .iter()
        .any(|a| a.entry("shell").is_some_and(|v| *v != Val::Bool(false)));
    let mut cmd: Vec<Val> = c.args.first().cloned().into_iter().collect();
    if let Some(Val::List(xs)) = c.args.get(1) {
        cmd.extend(xs.iter().cloned());
    } else if let Some(v) = c.args.get(1).filter(|v| !matches!(v, Val::Object(_))) {
        cmd.push(v.clone());
    }
    if shell {
        Action::Process {
            shell: true,
            command: cmd,
        }
    } else {
        process(false, cmd)
    }
}

/// A process without a shell, unless its program is a shell given `-c` (`sh -c "…"`): then the
/// command is the string after `-c`.
fn process(shell: bool, mut args: Vec<Val>) -> Action {
    if !shell {
        if let Some(Val::List(xs)) = args.first() {
            if args.len() == 1 {
                args = xs.clone();
            }
        }
        let prog = args
            .first()
            .and_then(Val::as_str)
            .map(|p| last(p.rsplit('/').next().unwrap_or(p)).to_string());
        let flag = args.get(1).and_then(Val::as_str);
        if matches!(
            prog.as_deref(),
            Some(
                "sh" | "bash" | "zsh" | "dash" | "ksh" | "cmd" | "cmd.exe" | "powershell" | "pwsh"
            )
        ) && matches!(flag, Some("-c" | "/c" | "/C" | "-Command" | "-lc"))
        {
            return Action::Process {
                shell: true,
                command: args.get(2).cloned().into_iter().collect(),
            };
        }
    }
    Action::Process {
        shell,
        command: args,
    }
}

/// A call that runs SQL whose statement (a constant or a built string's constant start) writes.
fn sql_write(c: &Call) -> Option<Action> {
    const RUNNERS: &[&str] = &[
        "execute",
        "executemany",
        "executescript",
        "exec",
        "run",
        "query",
        "raw",
        "Exec",
        "ExecContext",
        "Query",
        "QueryContext",
        "QueryRow",
        "QueryRowContext",
        "prepare",
        "Prepare",
    ];
    if !RUNNERS.contains(&last(&c.callee)) {
        return None;
    }
    c.args.iter().find_map(|a| {
        let text = match a {
            Val::Str(s) => s.as_str(),
            Val::Built { prefix, .. } => prefix.as_str(),
            _ => return None,
        };
        let word: String = text
            .trim_start()
            .chars()
            .take_while(|ch| ch.is_ascii_alphabetic())
            .collect::<String>()
            .to_ascii_uppercase();
        matches!(
            word.as_str(),
            "INSERT"
                | "UPDATE"
                | "DELETE"
                | "REPLACE"
                | "MERGE"
                | "UPSERT"
                | "DROP"
                | "ALTER"
                | "CREATE"
                | "TRUNCATE"
        )
        .then(|| Action::SqlWrite(word))
    })
}
