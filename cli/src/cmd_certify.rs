//! `qls certify DIR`: re-checks the certificates `qls verify --certificates DIR` wrote (SPEC §5)
//! with cvc5 — another solver than the Z3 that produced them — each in a process of its own
//! (`certify_cvc5.py` through a Python that has the `cvc5` package). A certificate is accepted
//! when its file is the one the index names (SHA-256), cvc5 reads it, and every `(check-sat)`
//! answers `unsat`, as many as the index lists — and, for an invariant's certificate, the same
//! of the shared file of its initiation and consecution, checked once however many certificates
//! name it. Exit 0 when every certificate is accepted (and,
//! under `--require-all`, every unreachable verdict has one), 1 when one is not, 2 when the
//! folder, the index or the checker cannot be used.

use clap::Args;
use prover::certificates::{read_index, sha256_hex};
use rayon::prelude::*;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The checker each certificate is run through.
const CHECKER: &str = include_str!("certify_cvc5.py");

/// The checker's exit code when cvc5 is not installed.
const NO_CVC5: i32 = 4;

/// Arguments of `qls certify`.
#[derive(Args, Debug)]
pub struct CertifyArgs {
    /// The folder `qls verify --certificates` wrote (with its certificates.json).
    pub dir: PathBuf,
    /// The Python with the `cvc5` package (pip install cvc5) [default: $QLS_PYTHON, else python3]
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// Seconds one certificate's check may take.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    /// Checks run at once [default: one per logical CPU].
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Fail (exit 1) when an unreachable verdict has no certificate.
    #[arg(long)]
    pub require_all: bool,
}

/// What checking one certificate found.
enum Checked {
    /// Every check answered unsat.
    Accepted,
    /// Why not.
    Rejected(String),
    /// The checker could not run at all (no Python, no cvc5): the whole command stops.
    Unusable(String),
}

/// What the checker process printed and how it ended.
struct Ran {
    version: Option<String>,
    answers: Vec<String>,
    error: Option<String>,
    code: Option<i32>,
    timed_out: bool,
}

/// Runs the checker on `file`, killed after `timeout`.
fn run_checker(python: &Path, file: &Path, timeout: Duration) -> std::io::Result<Ran> {
    let mut child = Command::new(python)
        .arg("-c")
        .arg(CHECKER)
        .arg(file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut out = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let (status, timed_out) = loop {
        if let Some(st) = child.try_wait()? {
            break (Some(st), false);
        }
        if start.elapsed() >= timeout {
            let _ = child.kill();
            let _ = child.wait();
            break (None, true);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let text = reader.join().unwrap_or_default();
    let mut ran = Ran {
        version: None,
        answers: vec![],
        error: None,
        code: status.and_then(|s| s.code()),
        timed_out,
    };
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("cvc5 ") {
            ran.version = Some(v.to_string());
        } else if let Some(e) = line.strip_prefix("error: ") {
            ran.error = Some(e.to_string());
        } else if !line.trim().is_empty() {
            ran.answers.push(line.trim().to_string());
        }
    }
    if ran.code.is_some_and(|c| c != 0) && ran.error.is_none() {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        let last = err.lines().last().unwrap_or("no message").to_string();
        ran.error = Some(format!("the checker exited with {:?}: {last}", ran.code));
    }
    Ok(ran)
}

/// One file to check: its name in the folder, the SHA-256 the index gives, and its checks.
struct Job<'a> {
    file: Option<&'a str>,
    sha256: Option<&'a str>,
    checks: &'a [String],
}

/// Checks one file (none: nothing to check, accepted).
fn check(dir: &Path, e: &Job<'_>, python: &Path, timeout: Duration) -> (Checked, String) {
    let Some(name) = e.file else {
        return (Checked::Accepted, String::new());
    };
    let path = dir.join(name);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(err) => {
            let why = format!("{}: cannot read: {err}", path.display());
            return (Checked::Rejected(why), String::new());
        }
    };
    let mut why = Vec::new();
    let digest = sha256_hex(&bytes);
    if e.sha256 != Some(digest.as_str()) {
        why.push(format!(
            "the file changed since it was written (SHA-256 {digest}, the index says {})",
            e.sha256.unwrap_or("none")
        ));
    }
    let ran = match run_checker(python, &path, timeout) {
        Ok(r) => r,
        Err(err) => {
            return (
                Checked::Unusable(format!("{}: cannot run: {err}", python.display())),
                String::new(),
            )
        }
    };
    let version = ran.version.clone().unwrap_or_default();
    if ran.code == Some(NO_CVC5) {
        let msg = ran.error.unwrap_or_else(|| "cvc5 is not installed".into());
        return (Checked::Unusable(msg), version);
    }
    if ran.timed_out {
        why.push(format!(
            "cvc5 did not finish within {} s ({} of {} checks answered)",
            timeout.as_secs(),
            ran.answers.len(),
            e.checks.len()
        ));
    }
    if let Some((i, a)) = ran.answers.iter().enumerate().find(|(_, a)| *a != "unsat") {
        let named = e.checks.get(i).map_or("unnamed", String::as_str);
        why.push(format!("check {} ({named}) answered {a}", i + 1));
    }
    if let Some(err) = &ran.error {
        why.push(format!("cvc5: {err}"));
    }
    if !ran.timed_out && ran.error.is_none() && ran.answers.len() != e.checks.len() {
        why.push(format!(
            "{} answers for the {} checks the index names",
            ran.answers.len(),
            e.checks.len()
        ));
    }
    match why.is_empty() {
        true => (Checked::Accepted, version),
        false => (Checked::Rejected(why.join("; ")), version),
    }
}

/// Runs `qls certify`.
pub fn certify(args: CertifyArgs) -> anyhow::Result<u8> {
    let index = read_index(&args.dir).map_err(|e| anyhow::anyhow!(e))?;
    let python = args
        .python
        .clone()
        .or_else(|| std::env::var_os("QLS_PYTHON").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("python3"));
    let timeout = Duration::from_secs(args.timeout.max(1));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.jobs.unwrap_or(0))
        .build()?;
    // Every certificate's file, then every shared file once.
    let jobs: Vec<Job<'_>> = (index.certificates.iter())
        .map(|e| Job {
            file: e.file.as_deref(),
            sha256: e.sha256.as_deref(),
            checks: &e.checks,
        })
        .chain(index.invariants.iter().map(|s| Job {
            file: Some(&s.file),
            sha256: Some(&s.sha256),
            checks: &s.checks,
        }))
        .collect();
    let mut results: Vec<(Checked, String)> = pool.install(|| {
        jobs.par_iter()
            .map(|e| check(&args.dir, e, &python, timeout))
            .collect()
    });
    let shared = results.split_off(index.certificates.len());
    let shared_of = |name: &str| {
        let at = (index.invariants.iter())
            .position(|s| s.file == name)
            .expect("read_index: every shared file named is listed");
        (&index.invariants[at], &shared[at].0)
    };
    if let Some((Checked::Unusable(why), _)) =
        (results.iter().chain(&shared)).find(|(c, _)| matches!(c, Checked::Unusable(_)))
    {
        anyhow::bail!("the checker cannot run: {why}");
    }
    let version = (results.iter().chain(&shared))
        .find(|(_, v)| !v.is_empty())
        .map_or("", |(_, v)| v.as_str());
    let (mut accepted, mut rejected, mut without) = (0, 0, 0);
    for (e, (c, _)) in index.certificates.iter().zip(&results) {
        // A certificate rests on its shared file too: refused when that is.
        let mut checks = e.checks.len();
        let mut c = c;
        let mut rests = String::new();
        let refused;
        if let Some(name) = &e.invariant {
            let (s, sc) = shared_of(name);
            checks += s.checks.len();
            rests = format!(" with {name}");
            if let (Checked::Accepted, Checked::Rejected(why)) = (c, sc) {
                refused = Checked::Rejected(format!("its shared file {name}: {why}"));
                c = &refused;
            }
        }
        match (&e.file, c) {
            (None, _) => {
                without += 1;
                let why = e.without.as_deref().unwrap_or("no reason given");
                println!("none      {}: {why}", e.obligation);
            }
            (Some(f), Checked::Accepted) => {
                accepted += 1;
                let what = match (e.kind.as_deref(), e.depth) {
                    (Some("induction"), Some(k)) => format!(
                        "an invariant of the box and {} conjunct(s), {k}-induction",
                        e.conjuncts.unwrap_or(0)
                    ),
                    (Some("spacer"), _) => "an inductive invariant Spacer found".into(),
                    (Some("fixpoint"), _) => match e.states {
                        Some(n) => format!("every reachable state ({n}), the symbolic fixpoint"),
                        None => "every reachable state, the symbolic fixpoint".into(),
                    },
                    (Some(kind), Some(d)) => format!("{kind} to depth {d}"),
                    _ => "a certificate".into(),
                };
                let what = match e.from_proof {
                    true => format!("{what} (the proof's own)"),
                    false => what,
                };
                println!(
                    "accepted  {} ({f}{rests}): {what}, {checks} checks unsat",
                    e.obligation
                );
            }
            (Some(f), Checked::Rejected(why) | Checked::Unusable(why)) => {
                rejected += 1;
                println!("REJECTED  {} ({f}): {why}", e.obligation);
            }
        }
    }
    println!(
        "{accepted} accepted, {rejected} rejected by cvc5 {version}; {without} unreachable \
         verdict(s) without a certificate"
    );
    let failed = rejected > 0 || (args.require_all && without > 0);
    Ok(u8::from(failed))
}
