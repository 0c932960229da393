//! Standard output for the commands that also talk to peers. Rust ignores SIGPIPE so that
//! a peer's closed socket is an error rather than a death; a standard output whose reader
//! stopped early (`venn bench | head`) is then an error too, and `println!` turns it into a
//! panic. These commands print with `out!` instead, and a closed standard output ends
//! them quietly, by SIGPIPE as any other tool (their temporary directories removed first).
//! Output written through `--output -` reports the same through its error
//! ([`venn_app::destination::closed_stdout`]), which `main` ends on alike.

use std::io::Write;

/// `println!` for the commands that talk to peers: a closed standard output ends the
/// command quietly.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::stdout::line(format_args!($($arg)*))
    };
}

/// Prints `text` and a line break on standard output.
pub(crate) fn line(text: std::fmt::Arguments) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
        drop(stdout);
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            closed();
        }
        eprintln!("venn: error: cannot write to standard output: {e}");
        venn_app::temp_dirs::remove_all();
        std::process::exit(1);
    }
}

/// Ends the process as a closed standard output would have with SIGPIPE's default action.
pub(crate) fn closed() -> ! {
    crate::signals::end_by(libc::SIGPIPE)
}
