//! Ending on a signal without leaving a run's temporary directories behind. SIGINT
//! (Ctrl-C), SIGTERM and SIGHUP end a process where it stands, so a run split into buckets
//! would leave its bucket files (about the input's size, its keys in the clear) in
//! `$TMPDIR`. Here the handler does only what is safe in one — it writes the signal's
//! number to a pipe — and a thread woken by it removes the directories
//! ([`venn_app::temp_dirs::remove_all`]), then ends the process by the same signal with its
//! default action, so that the exit status still tells which.

use std::io::Read;
use std::os::fd::IntoRawFd;
use std::sync::atomic::{AtomicI32, Ordering};

/// The signals that end a run.
const ENDING: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The pipe's writing end, for the handler (open for the life of the process).
static PIPE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(signal: libc::c_int) {
    let byte = signal as u8;
    // SAFETY: write(2) is async-signal-safe; the byte outlives the call.
    unsafe {
        libc::write(PIPE.load(Ordering::Relaxed), (&raw const byte).cast(), 1);
    }
}

/// Removes the temporary directories when one of the ending signals arrives, before the
/// process ends by it. A signal ignored when venn started (`nohup` ignores SIGHUP) stays
/// ignored.
pub(crate) fn remove_temp_dirs_on_signals() -> std::io::Result<()> {
    let (mut reader, writer) = std::io::pipe()?;
    PIPE.store(writer.into_raw_fd(), Ordering::Relaxed);
    std::thread::Builder::new()
        .name("venn-signals".into())
        .spawn(move || {
            let mut signal = [0u8];
            if reader.read_exact(&mut signal).is_ok() {
                end_by(signal[0].into());
            }
        })?;
    for signal in ENDING {
        // SAFETY: reads the signal's action, and sets one whose handler only writes to a
        // pipe; `action` is fully initialised (zeroed, then its mask emptied).
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if old.sa_sigaction == libc::SIG_IGN {
                continue;
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// Removes the temporary directories and ends the process by `signal`, as its default
/// action would have.
pub(crate) fn end_by(signal: libc::c_int) -> ! {
    venn_app::temp_dirs::remove_all();
    // SAFETY: restores one signal's default action and sends it to this thread; no code
    // of ours runs in a handler.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
    std::process::exit(128 + signal)
}
