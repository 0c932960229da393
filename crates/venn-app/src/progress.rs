//! A spinner on stderr for protocol phases that run longer than about a second, shown only
//! when stderr is a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use venn::protocols::Progress;

/// How long a phase runs before its spinner appears.
const SHOW_AFTER: Duration = Duration::from_secs(1);

struct Current {
    bar: ProgressBar,
    started: Instant,
    shown: bool,
}

/// Phase spinners; dropping it clears the last one.
pub struct Spinner {
    current: Arc<Mutex<Option<Current>>>,
    stop: Arc<Mutex<bool>>,
    /// Said before every phase's name (e.g. which bucket of a bucketed run).
    context: Mutex<String>,
}

impl Spinner {
    /// A spinner if stderr is a terminal.
    pub fn if_terminal(label: &str) -> Option<Spinner> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let current: Arc<Mutex<Option<Current>>> = Arc::default();
        let stop = Arc::new(Mutex::new(false));
        let (c, s, label) = (current.clone(), stop.clone(), label.to_string());
        std::thread::spawn(move || {
            while !*s.lock().expect("spinner lock") {
                if let Some(cur) = c.lock().expect("spinner lock").as_mut() {
                    if !cur.shown && cur.started.elapsed() >= SHOW_AFTER {
                        cur.bar.set_draw_target(ProgressDrawTarget::stderr());
                        cur.bar.set_prefix(label.clone());
                        cur.bar.enable_steady_tick(Duration::from_millis(100));
                        cur.shown = true;
                    }
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        Some(Spinner {
            current,
            stop,
            context: Mutex::default(),
        })
    }
}

impl Spinner {
    /// Says `text` before every following phase's name.
    pub fn context(&self, text: &str) {
        *self.context.lock().expect("spinner lock") = text.to_string();
    }

    /// Changes what the current spinner says, keeping its clock.
    pub fn message(&self, text: &str) {
        if let Some(cur) = self.current.lock().expect("spinner lock").as_ref() {
            cur.bar.set_message(text.to_string());
        }
    }
}

impl Progress for Spinner {
    fn phase(&self, name: &str) {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template("{prefix} {spinner} {msg} ({elapsed})")
                .expect("valid template"),
        );
        bar.set_message(format!(
            "{}{name}",
            self.context.lock().expect("spinner lock")
        ));
        let old = self.current.lock().expect("spinner lock").replace(Current {
            bar,
            started: Instant::now(),
            shown: false,
        });
        if let Some(old) = old {
            old.bar.finish_and_clear();
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        *self.stop.lock().expect("spinner lock") = true;
        if let Some(cur) = self.current.lock().expect("spinner lock").take() {
            cur.bar.finish_and_clear();
        }
    }
}
