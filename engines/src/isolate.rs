//! A computation run in a forked child process, its answer read back through a pipe: for a
//! library that may abort the whole process or hang past its own timeout. Z3 4.8.12's Spacer
//! (`pdr.rs`) is one: on the systems the value analysis reduces, the test binary aborted in
//! `Z3_fixedpoint_dec_ref` with a corrupted heap in about half its full runs, after Spacer
//! queries its timeout had cancelled. In a child, such an abort ends only the child, and its
//! question stays open: the caller treats a missing answer as "unknown", never as an answer.
//!
//! The child is a `fork` of the calling thread, with the parent's memory copied on write, so it
//! can use what the thread built (its Z3 context and terms) without serialising anything. Only
//! that thread exists in the child, so the child must not wait on anything another thread of
//! the parent would have done: it sets no Z3 timeout (Z3's timer threads are not in the child;
//! [`in_child`]'s times are the caps, enforced by the parent's `SIGKILL`), and a lock held by
//! another thread at the fork (a Z3 global, the allocator's) leaves the child waiting until the
//! parent kills it — an open question, as a timeout leaves it.

use std::time::Duration;

/// Runs `f` in a child process and returns its bytes, or `None` when the child did not answer
/// in time (killed), died, or could not be started. The whole call ends within `within`; inside
/// it, as a solver's own timeout counts only the search, `f` prepares (what the child first
/// touches of the parent's memory is copied then, which on large systems takes longer than a
/// short search), calls the function it is given, and from then on has `limit`. `f` must not set
/// Z3 timeouts or wait on other threads (see the module's note).
#[cfg(unix)]
pub(crate) fn in_child(
    within: Duration,
    limit: Duration,
    f: impl FnOnce(&dyn Fn()) -> Vec<u8>,
) -> Option<Vec<u8>> {
    use std::time::Instant;
    let ready_by = Instant::now() + within;
    let mut fds = [0i32; 2];
    // SAFETY: `pipe` writes two descriptors into the array it is given.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return None;
    }
    let (read_end, write_end) = (fds[0], fds[1]);
    // SAFETY: the child runs only `f` and the writes below, then `_exit`s: it never returns
    // into the parent's frames (a panic in `f` is caught), and runs no destructor or `atexit`
    // handler of the parent's.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        close(read_end);
        close(write_end);
        return None;
    }
    if pid == 0 {
        close(read_end);
        // The child ends itself too: by `SIGALRM` a little after `within`, and (Linux) with
        // the parent, so a parent killed meanwhile leaves no Spacer running on.
        // SAFETY: plain system calls on the child itself.
        unsafe {
            libc::alarm(within.as_secs().saturating_add(2).min(u32::MAX as u64) as u32);
            #[cfg(target_os = "linux")]
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        }
        let started = std::cell::Cell::new(false);
        let start = || {
            if !started.replace(true) {
                write_all(write_end, &[STARTED]);
            }
        };
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&start)));
        let code = match out {
            Ok(bytes) => {
                start();
                // Length first: another child forked meanwhile may hold this pipe's write end
                // open too, so the parent cannot wait for end-of-file.
                let len = (bytes.len() as u64).to_le_bytes();
                if write_all(write_end, &len) && write_all(write_end, &bytes) {
                    0
                } else {
                    1
                }
            }
            Err(_) => 1,
        };
        // SAFETY: ends the child at once, as the module's note requires.
        unsafe { libc::_exit(code) }
    }
    close(write_end);
    let answer = read_answer(read_end, ready_by, limit);
    close(read_end);
    if answer.is_none() {
        // SAFETY: `pid` is our child, not yet waited for.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let mut status = 0;
    // SAFETY: reaps our own child (it has answered, or was just killed).
    unsafe { libc::waitpid(pid, &mut status, 0) };
    let clean = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    answer.filter(|_| clean)
}

/// Without `fork`, `f` runs in the process itself (the caller's own timeout must then bound it).
#[cfg(not(unix))]
pub(crate) fn in_child(
    _within: Duration,
    _limit: Duration,
    f: impl FnOnce(&dyn Fn()) -> Vec<u8>,
) -> Option<Vec<u8>> {
    Some(f(&|| {}))
}

/// The byte a child writes when its `limit` starts (its answer follows).
#[cfg(unix)]
const STARTED: u8 = b'S';

#[cfg(unix)]
fn close(fd: i32) {
    // SAFETY: closes a descriptor this module opened.
    unsafe { libc::close(fd) };
}

#[cfg(unix)]
fn write_all(fd: i32, mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        // SAFETY: writes from a live slice of the given length.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return false;
        }
        bytes = &bytes[n as usize..];
    }
    true
}

/// The child's answer: the [`STARTED`] byte by `ready_by`, then the length-prefixed bytes within
/// `limit` of it and by `ready_by` still (`None`: late, short, or the pipe closed first).
#[cfg(unix)]
fn read_answer(fd: i32, ready_by: std::time::Instant, limit: Duration) -> Option<Vec<u8>> {
    let mut got: Vec<u8> = vec![];
    let mut want: Option<usize> = None;
    let mut until = ready_by;
    let mut started = false;
    let mut buf = [0u8; 65536];
    loop {
        if !started && !got.is_empty() {
            if got[0] != STARTED {
                return None;
            }
            got.remove(0);
            started = true;
            until = (std::time::Instant::now() + limit).min(ready_by);
        }
        if want.is_none() && got.len() >= 8 {
            let mut len = [0u8; 8];
            len.copy_from_slice(&got[..8]);
            want = Some(u64::from_le_bytes(len) as usize);
        }
        if let Some(n) = want {
            if got.len() >= 8 + n {
                return Some(got[8..8 + n].to_vec());
            }
        }
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return None;
        }
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
        // SAFETY: polls one descriptor described by a live `pollfd`.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return None;
        }
        if r == 0 {
            continue;
        }
        // SAFETY: reads into a live buffer of the given length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return None;
        }
        if n == 0 {
            return None;
        }
        got.extend_from_slice(&buf[..n as usize]);
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn the_childs_bytes_come_back() {
        let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let out = in_child(Duration::from_secs(30), Duration::from_secs(30), |_| {
            big.clone()
        });
        assert_eq!(out.as_deref(), Some(&big[..]));
    }

    #[test]
    fn a_child_that_aborts_or_panics_answers_nothing() {
        let d = Duration::from_secs(30);
        assert_eq!(in_child(d, d, |_| std::process::abort()), None);
        assert_eq!(in_child(d, d, |_| panic!("in the child")), None);
    }

    #[test]
    fn a_child_past_its_limit_is_killed() {
        let start = std::time::Instant::now();
        let short = Duration::from_millis(200);
        let out = in_child(short, short, |started| {
            started();
            std::thread::sleep(Duration::from_secs(30));
            vec![1]
        });
        assert_eq!(out, None);
        // Nor one that does not start within its setup time.
        let out = in_child(short, short, |_| {
            std::thread::sleep(Duration::from_secs(30));
            vec![1]
        });
        assert_eq!(out, None);
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn the_setup_does_not_count_against_the_limit() {
        let out = in_child(
            Duration::from_secs(30),
            Duration::from_millis(300),
            |started| {
                std::thread::sleep(Duration::from_millis(600));
                started();
                vec![7]
            },
        );
        assert_eq!(out, Some(vec![7]));
    }
}
