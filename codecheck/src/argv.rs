//! How a process's command line takes a tool's arguments (QC104 and QC105). Without a shell, an
//! argument that is one element of the list after a fixed program cannot start another
//! command: at most it can be read as an option of that program (CWE-88, argument injection),
//! and not even that after a `--` element, nor when a constant glued before it fixes its first
//! character (`--month=` + month). The program itself, a shell's command line, and an element
//! a program runs as code or as another program (an interpreter's code or script, a wrapper such
//! as `sudo`, `env`, `xargs` or `ssh`, whose later elements are a command) stay a process *run*
//! from the argument (QC104). A program whose name the file does not fix is read as one that
//! may be a wrapper: its arguments stay QC104 — never less than before.

use crate::effects::FileCtx;
use crate::model::{Function, Val};
use std::collections::BTreeSet;

/// Programs whose later elements can be a command, a program or code they run: `sudo X`,
/// `env X`, `xargs X`, `ssh host X`, `find … -exec X`, `docker run img X`, `npx X`, `make
/// VAR=$(…)`. A `--` does not protect there (`sudo -- X` runs X).
const WRAPPERS: &[&str] = &[
    "env",
    "sudo",
    "doas",
    "su",
    "runuser",
    "pkexec",
    "nohup",
    "timeout",
    "nice",
    "ionice",
    "time",
    "stdbuf",
    "chroot",
    "setsid",
    "watch",
    "xargs",
    "strace",
    "ltrace",
    "ssh",
    "script",
    "flock",
    "unshare",
    "nsenter",
    "taskset",
    "chrt",
    "firejail",
    "bwrap",
    "docker",
    "podman",
    "kubectl",
    "oc",
    "npx",
    "bunx",
    "uvx",
    "pipx",
    "uv",
    "poetry",
    "pnpm",
    "yarn",
    "npm",
    "find",
    "parallel",
    "busybox",
    "exec",
    "command",
    "eval",
    "start",
    "runas",
    "wsl",
    "gdb",
    "valgrind",
    "make",
    "cmake",
    "ninja",
    "rsh",
    "sshpass",
    "expect",
    "tmux",
    "screen",
    "systemd-run",
];

/// Programs whose first operand (or the value of `-c`/`-e`/`-m`/`-f`) is code or a script they
/// run: an argument there is code (QC104); after that constant script or code, an argument is
/// its argv (QC105).
const INTERPRETERS: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "fish",
    "csh",
    "tcsh",
    "cmd",
    "powershell",
    "pwsh",
    "node",
    "nodejs",
    "deno",
    "bun",
    "perl",
    "ruby",
    "php",
    "lua",
    "luajit",
    "rscript",
    "r",
    "osascript",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "sed",
    "gsed",
    "tclsh",
    "wish",
    "groovy",
    "java",
    "scala",
    "kotlin",
    "dotnet",
    "julia",
    "pypy",
    "pypy3",
    "jshell",
    "swift",
    "go",
];

/// An interpreter's options whose value is not its script (`node -r preload script`): the
/// element after one is neither the script nor an argv element.
const VALUE_FLAGS: &[&str] = &[
    "-r",
    "--require",
    "--import",
    "--loader",
    "--experimental-loader",
    "-W",
    "-X",
    "-I",
    "-v",
    "--env-file",
];

/// What a command line does with the tool's arguments.
#[derive(Debug, Default, PartialEq)]
pub struct ArgvUse {
    /// Arguments that decide what runs: the program, a shell's command line, an interpreter's
    /// code or a wrapper's command (QC104).
    pub runs: BTreeSet<String>,
    /// Arguments that can begin an element after a fixed program, with no `--` before them
    /// (QC105).
    pub options: BTreeSet<String>,
}

/// The program's name as written (`/usr/bin/git` and `git.exe` are `git`), when the file fixes
/// it: a constant, or a name bound once in the file to one.
fn program_name(cx: &FileCtx, v: &Val) -> Option<String> {
    let text = match v {
        Val::Str(s) => s.clone(),
        Val::Path(p) if cx.constants.contains(p) => cx
            .unit
            .assigns
            .iter()
            .find(|a| a.targets.len() == 1 && &a.targets[0] == p)
            .and_then(|a| a.value.as_str().map(str::to_string))?,
        _ => return None,
    };
    Some(program_base(&text))
}

/// Whether a program (its name as [`program_base`] gives it) reads its elements as its own
/// options and operands: neither a wrapper nor an interpreter, so a `--` element ends its
/// options and changes nothing else.
pub fn plain_program(name: &str) -> bool {
    !WRAPPERS.contains(&name) && !interpreter(name)
}

/// A program's name as written, without its folder, `.exe` or case (`/usr/bin/Git.exe` is `git`).
pub fn program_base(text: &str) -> String {
    let base = text.rsplit(['/', '\\']).next().unwrap_or(text);
    let base = base.to_ascii_lowercase();
    base.strip_suffix(".exe").unwrap_or(&base).to_string()
}

fn interpreter(prog: &str) -> bool {
    INTERPRETERS.contains(&prog)
        || prog
            .strip_prefix("python")
            .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// Whether the argument can decide the first character of the element: the element is the
/// value itself, or built from it with nothing constant before it, or only dashes (`f"--{opt}"`
/// names the option). `--month=` + month, `https://x/` + id: it cannot.
fn may_start_element(v: &Val) -> bool {
    match v {
        Val::Built { prefix, .. } => prefix.chars().all(|c| c == '-'),
        Val::Str(_) | Val::Null | Val::Num | Val::Bool(_) => false,
        _ => true,
    }
}

/// How the command `command` (a shell's command line, or the program and its elements) takes
/// the arguments: `from(v)` is the set of the tool's parameters a value derives from.
pub fn argv_use(
    cx: &FileCtx,
    shell: bool,
    command: &[Val],
    from: impl Fn(&Val) -> BTreeSet<String>,
) -> ArgvUse {
    let all: BTreeSet<String> = command.iter().flat_map(&from).collect();
    let runs_all = || ArgvUse {
        runs: all.clone(),
        options: BTreeSet::new(),
    };
    if all.is_empty() {
        return ArgvUse::default();
    }
    let Some((prog, rest)) = command.split_first() else {
        return runs_all();
    };
    if shell || !from(prog).is_empty() {
        return runs_all();
    }
    let Some(name) = program_name(cx, prog) else {
        return runs_all();
    };
    if WRAPPERS.contains(&name.as_str()) {
        return runs_all();
    }
    let interp = !plain_program(&name);
    // For an interpreter: whether its constant script (or code) has been passed yet.
    let mut script = !interp;
    let mut ended = false;
    let mut flag_value = false;
    let mut out = ArgvUse::default();
    for el in rest {
        let f = from(el);
        if f.is_empty() {
            let text = el.as_str();
            if flag_value {
                flag_value = false;
            } else if script && text == Some("--") {
                ended = true;
            } else if !script {
                match text {
                    Some(t) if VALUE_FLAGS.contains(&t) => flag_value = true,
                    Some(t) if !t.starts_with('-') => script = true,
                    _ => {}
                }
            }
            continue;
        }
        if !script || flag_value {
            // An interpreter's code, script or preloaded module from the argument.
            flag_value = false;
            out.runs.extend(f);
        } else if !ended && may_start_element(el) {
            out.options.extend(f);
        }
    }
    out
}

/// A command that is one name bound once in the function, to a list (`cmd = ["git", "log",
/// ref]; run(cmd)`), read as that list; any other command as it is (a name bound twice may
/// hold either list, so it is not read through).
pub fn command_elements(cx: &FileCtx, f: &Function, command: &[Val]) -> Vec<Val> {
    if let [Val::Path(p)] = command {
        let mut binds = cx
            .unit
            .assigns_in(f.range)
            .filter(|a| a.targets.iter().any(|t| t == p));
        if let (Some(a), None) = (binds.next(), binds.next()) {
            if let (Val::List(xs), [_]) = (&a.value, a.targets.as_slice()) {
                return xs.clone();
            }
        }
    }
    command.to_vec()
}
