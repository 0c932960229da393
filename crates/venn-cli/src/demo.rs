//! `venn demo`: two small customer lists, intersected by two parties over loopback TCP
//! with the same code paths as `venn send` / `venn receive`. The files go to a temporary
//! directory removed on exit, and are shown by their contents only; `--keep DIR` writes
//! them to DIR instead, to try `venn send`/`venn receive` on by hand.

use std::path::Path;
use std::time::Duration;
use venn::session::Role;
use venn::util::files::write_new;
use venn::{Error, Result};
use venn_app::input::KeyOptions;
use venn_app::party::{run_party, summary, Link, PartyArgs, PeerAddr, RunSpec};

const ALICE: &str = "email,name,plan\n\
ada@example.org,Ada Lovelace,pro\n\
alan@example.org,Alan Turing,free\n\
grace@example.org,Grace Hopper,pro\n\
\"claude@example.org\",\"Shannon, Claude\",team\n\
edsger@example.org,Edsger Dijkstra,free\n\
barbara@example.org,Barbara Liskov,pro\n";

const BOB: &str = "email,city\n\
GRACE@example.org ,Arlington\n\
donald@example.org,Stanford\n\
ada@example.org,London\n\
claude@example.org,Petoskey\n\
john@example.org,Budapest\n";

/// Runs the demo and prints what each side had and what the receiver learned; with
/// `keep`, in files left in that directory (made if missing; no file in it is replaced).
pub(crate) fn demo(keep: Option<&Path>) -> Result<()> {
    let temporary;
    let dir = match keep {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(Error::file("create directory", dir))?;
            dir
        }
        None => {
            temporary = venn_app::temp_dirs::TempDir::new_in(&std::env::temp_dir(), "venn-demo-")?;
            temporary.path()
        }
    };
    let (alice, bob, out) = (
        dir.join("alice.csv"),
        dir.join("bob.csv"),
        dir.join("bob-matches.csv"),
    );
    if let Some(taken) = [&alice, &bob, &out].into_iter().find(|p| p.exists()) {
        return Err(Error::Usage(format!(
            "'{}' exists; venn demo --keep never replaces a file",
            taken.display()
        )));
    }
    write_new(&alice, ALICE.as_bytes(), 0o644)?;
    write_new(&bob, BOB.as_bytes(), 0o644)?;
    // Only files that stay are named.
    let named = |path: &Path| match keep {
        Some(_) => format!(" ({})", path.display()),
        None => String::new(),
    };
    out!("Alice (sender) holds{}:\n{ALICE}", named(&alice));
    out!("Bob (receiver) holds{}:\n{BOB}", named(&bob));
    out!(
        "Both run {} over loopback TCP; keys are trimmed and lower-cased.\n",
        RunSpec::default().protocol
    );
    let args = |input, output, peer| PartyArgs {
        link: Link {
            spec: RunSpec::default(),
            dealer: None,
            peer,
            stats_json: None,
            transport: venn_app::transport::Transport::loopback(),
        },
        input,
        output,
        bucket_rows: None,
        bucket_dir: None,
        keys: KeyOptions {
            columns: vec!["email".into()],
            trim: true,
            lowercase: true,
            ..KeyOptions::default()
        },
        both: false,
        peer_columns: Vec::new(),
        join: venn_app::join::JoinKind::Inner,
        align: venn::session::run_plan::Align::None,
        state: None,
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let bob_args = args(
        bob.clone(),
        Some(out.clone()),
        PeerAddr::Listen("127.0.0.1:0".into()),
    );
    let (sent, received) = std::thread::scope(|s| {
        let t = s.spawn(|| {
            run_party(
                &bob_args,
                Role::Receiver,
                &mut bob_args.file_output(),
                None,
                |addr| {
                    let _ = tx.send(addr);
                },
            )
        });
        let sent = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(addr) => {
                let a = args(alice.clone(), None, PeerAddr::Connect(addr.to_string()));
                run_party(&a, Role::Sender, &mut a.file_output(), None, |_| {})
            }
            Err(_) => Err(Error::Timeout(Duration::from_secs(30))),
        };
        (sent, t.join().expect("receiver thread"))
    });
    let (sent, received) = (sent?, received?);
    out!("{}", summary(&sent));
    out!("{}\n", summary(&received));
    out!("Bob learns these of his rows{}:", named(&out));
    out!("{}", std::fs::read_to_string(&out)?.trim_end_matches('\n'));
    out!("\nAlice learns nothing; neither learns the other's non-matching rows.");
    if keep.is_some() {
        let keys = "--column email --trim --lowercase";
        out!(
            "\nThe same by hand, in two terminals:\n  venn receive --input {} {keys} \
             --listen 127.0.0.1:7766 --output {}\n  venn send --input {} {keys} --connect \
             127.0.0.1:7766",
            bob.display(),
            out.display(),
            alice.display()
        );
    }
    Ok(())
}
