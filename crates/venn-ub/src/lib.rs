//! Unbalanced PSI's server side (`venn ub`): a dataset kept in a directory, changed by its
//! operator and served to many clients.
//!
//! A dataset's directory holds its store (`store.sqlite`, or a PostgreSQL database named
//! by URL: the authoritative items and every change to them, [`store`]), its OPRF keys
//! (`keys/`, one owner-only file per epoch, `keys`) and what it publishes
//! (`published/`: the tag set, its recent deltas and the manifest naming them,
//! [`publish`]). The operator's commands change it one at a time (a lock on
//! `writer.lock`): [`init`], [`update`], [`rotate_key`]. A server ([`serve`]) reads only
//! the manifest, its files and the key of its epoch, and follows each new manifest as
//! it is published.

mod keys;
pub mod publish;
pub mod serve;
pub mod store;

use publish::{catch_up, publish_whole, Manifest};
use std::fs::File;
use std::path::Path;
use store::{Applied, Settings, Store};
use venn::{Error, Result};

/// Where a dataset's store is: the SQLite file in its directory unless a URL is given.
pub fn store_url(dir: &Path, database: Option<&str>) -> String {
    match database {
        Some(url) => url.to_owned(),
        None => format!("sqlite://{}", dir.join("store.sqlite").display()),
    }
}

/// The operator's hold on a dataset: while it lives, no other command changes it.
struct Writer {
    _lock: File,
}

impl Writer {
    /// Takes the dataset in `dir`, or says another command has it.
    fn take(dir: &Path) -> Result<Writer> {
        let path = dir.join(LOCK);
        let file = (std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true))
        .open(&path)
        .map_err(Error::file("open", &path))?;
        match file.try_lock() {
            Ok(()) => Ok(Writer { _lock: file }),
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::Usage(format!(
                "another `venn ub` command is changing the dataset in {}; try again when it \
                 is done",
                dir.display()
            ))),
            Err(std::fs::TryLockError::Error(e)) => Err(Error::file("lock", &path)(e)),
        }
    }
}

/// Makes a dataset in `dir` (new, or an empty directory) of `items` (distinct), with
/// their `labels` where `settings` say its items carry them: its store, its first key
/// and its first publish. A directory where an init was interrupted
/// before its first publish (its lock file there, no manifest) is taken up again: if its
/// store holds the dataset already, what it holds is published (and `items` are not
/// read: [`Init::Resumed`]).
pub fn init(
    dir: &Path,
    database: Option<&str>,
    settings: &Settings,
    items: &[&[u8]],
    labels: Option<&[&[u8]]>,
) -> Result<(Manifest, Init)> {
    if publish::manifest_path(dir).exists() {
        return Err(Error::Usage(format!(
            "{} holds a dataset already",
            dir.display()
        )));
    }
    if settings.modes.fhe() {
        // Before anything is made: no set may serve these sizes.
        publish::fhe_sets(settings)?;
    }
    let begun = dir.join(LOCK).exists();
    match std::fs::read_dir(dir).map(|mut entries| entries.next().is_some()) {
        Ok(true) if !begun => {
            return Err(Error::Usage(format!(
                "{} is not empty: a dataset is made in a new or empty directory",
                dir.display()
            )))
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(Error::file("make", dir))?
        }
        Err(e) => return Err(Error::file("list", dir)(e)),
    }
    let _writer = Writer::take(dir)?;
    let store = Store::open(&store_url(dir, database))?;
    let key = keys::next(dir, 0)?;
    match store.settings() {
        Ok(stored) if begun => Ok((publish_store(dir, &store, &stored, key, 0)?, Init::Resumed)),
        _ => {
            store.create(settings, items, labels)?;
            let manifest = publish_whole(dir, items, labels, 0, settings, key, 0)?;
            Ok((manifest, Init::Made))
        }
    }
}

/// What [`init`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Init {
    /// Made the dataset of the items given.
    Made,
    /// Published what an interrupted init had stored.
    Resumed,
}

/// The operators' lock file in a dataset's directory.
const LOCK: &str = "writer.lock";

/// Adds `upserts` (with their `labels` in a labeled dataset: an item held with another
/// label is relabelled) and removes `deletes` (see [`Store::apply`]), then publishes the
/// next version (with whatever an interrupted update left unpublished). With neither,
/// only that.
pub fn update(
    dir: &Path,
    database: Option<&str>,
    upserts: &[&[u8]],
    labels: Option<&[&[u8]]>,
    deletes: &[&[u8]],
) -> Result<(Applied, Manifest)> {
    Manifest::read(dir)?;
    let _writer = Writer::take(dir)?;
    let store = Store::open(&store_url(dir, database))?;
    let applied = store.apply(upserts, labels, deletes)?;
    Ok((applied, catch_up(dir, &store)?))
}

/// Moves the dataset to a new key (the next epoch) and publishes its whole set under
/// it: every client downloads the new set, and what clients learnt of items they
/// evaluated under the old key stops following the set.
pub fn rotate_key(dir: &Path, database: Option<&str>) -> Result<Manifest> {
    Manifest::read(dir)?;
    let _writer = Writer::take(dir)?;
    let store = Store::open(&store_url(dir, database))?;
    let settings = store.settings()?;
    let epoch = (Manifest::read(dir)?.epoch.checked_add(1))
        .ok_or_else(|| Error::Usage("the key's epochs are used up".into()))?;
    let key = keys::next(dir, epoch)?;
    publish_store(dir, &store, &settings, key, epoch)
}

/// Publishes the whole set `store` holds (and its labels) under `key` of `epoch`.
fn publish_store(
    dir: &Path,
    store: &Store,
    settings: &Settings,
    key: venn::crypto::oprf::ServerKey,
    epoch: u32,
) -> Result<Manifest> {
    let (covered_seq, items, labels) = store.items()?;
    let refs: Vec<&[u8]> = items.iter().collect();
    let labels: Option<Vec<&[u8]>> = labels.as_ref().map(|l| l.iter().collect());
    publish_whole(
        dir,
        &refs,
        labels.as_deref(),
        covered_seq,
        settings,
        key,
        epoch,
    )
}

/// The Thunder service's test cluster, for the store's PostgreSQL scenario.
#[cfg(test)]
#[path = "../../venn-service/tests/common/postgres.rs"]
mod postgres;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Modes;
    use std::collections::{BTreeMap, BTreeSet};
    use std::time::Duration;
    use venn::crypto::{Block, Prg};
    use venn::net::{mem_pair, Channel};
    use venn::session::run_plan::KeyForm;
    use venn::unbalanced::cache::CacheClient;
    use venn::unbalanced::fhe::plaintexts::PlaintextBudget;
    use venn::unbalanced::link::{serve_session, Published, Session};

    fn name(i: u32) -> Vec<u8> {
        format!("item {i}").into_bytes()
    }

    fn settings(max_items: u64) -> Settings {
        Settings {
            max_items,
            max_query: 256,
            form: KeyForm {
                trim: false,
                lowercase: false,
                columns: 1,
                any: false,
            },
            label_len: None,
            modes: Modes::Cache,
        }
    }

    fn refs(items: &[Vec<u8>]) -> Vec<&[u8]> {
        items.iter().map(Vec::as_slice).collect()
    }

    /// Which lookups matched.
    pub(crate) fn hits(found: &[Option<Vec<u8>>]) -> Vec<bool> {
        found.iter().map(Option::is_some).collect()
    }

    /// A client's session against `published` in memory: syncs `held`, looks `probes`
    /// up (and, with `fhe`, every third in ub-fhe too: found alike); returns the client
    /// and what it found.
    fn look_up(
        published: &Published,
        held: Option<CacheClient>,
        probes: &[Vec<u8>],
        fhe: bool,
    ) -> (CacheClient, Vec<Option<Vec<u8>>>) {
        let (c, s) = mem_pair(Duration::from_secs(120));
        let (mut c, mut s): (Box<dyn Channel>, Box<dyn Channel>) = (Box::new(c), Box::new(s));
        std::thread::scope(|scope| {
            scope.spawn(move || {
                let mut prg = Prg::from_seed(Block::from(1));
                serve_session(&mut *s, published, &mut |_| Ok(()), &mut prg).unwrap()
            });
            let mut session = Session::open(&mut *c).unwrap();
            let client = session.sync(held, 1 << 20).unwrap();
            let mut prg = Prg::from_seed(Block::from(2));
            let found = session.query(&client, &refs(probes), &mut prg).unwrap();
            if fhe {
                let some: Vec<Vec<u8>> = probes.iter().step_by(3).cloned().collect();
                let fhe = session.query_fhe(&refs(&some), &mut prg).unwrap();
                let cache: Vec<Option<Vec<u8>>> = found.iter().step_by(3).cloned().collect();
                assert_eq!(fhe, cache, "ub-fhe's answers are ub-cache's");
                // A single key takes the single keys' database.
                for at in [3, 4] {
                    let one = session.query_fhe(&refs(&probes[at..=at]), &mut prg);
                    assert_eq!(one.unwrap(), found[at..=at], "the single key {at}");
                }
            }
            session.close().unwrap();
            (client, found)
        })
    }

    /// Rounds of inserts and deletes (some of items held, or not) keep the store, the
    /// published set and a client following by deltas equal to a model set; the counts
    /// each update reports are the model's.
    #[test]
    fn updates_follow_a_model_and_clients_follow_them() {
        follow_a_model(None, false, Modes::Cache);
    }

    /// The same served in both modes, labeled: the ub-fhe database follows by its deltas
    /// (and is written again past its bound), its answers equal to ub-cache's.
    #[test]
    fn the_fhe_database_follows_the_model_too() {
        follow_a_model(None, true, Modes::Both);
    }

    /// The same with labels, each upsert of a held item a relabel: a client's lookups
    /// give the model's labels, through label deltas and the label table written again.
    #[test]
    fn labels_follow_the_model_too() {
        follow_a_model(None, true, Modes::Cache);
    }

    /// The same in a PostgreSQL store (skipped where PostgreSQL cannot start, unless CI
    /// sets VENN_REQUIRE_POSTGRES).
    #[test]
    fn a_postgres_store_follows_the_model_too() {
        match crate::postgres::Postgres::start() {
            Ok(pg) => follow_a_model(Some(&format!("{}/postgres", pg.url)), true, Modes::Cache),
            Err(why) if std::env::var_os("VENN_REQUIRE_POSTGRES").is_some() => {
                panic!("the PostgreSQL store's scenario cannot run: {why}")
            }
            Err(why) => eprintln!("SKIPPED: the PostgreSQL store's scenario: {why}"),
        }
    }

    fn follow_a_model(database: Option<&str>, labeled: bool, modes: Modes) {
        let dir = tempfile::tempdir().unwrap();
        let label = |i: u32, round: u32| match labeled {
            true => format!("{i}.{round}").into_bytes(),
            false => Vec::new(),
        };
        let settings = Settings {
            label_len: labeled.then_some(8),
            modes,
            ..settings(1 << 12)
        };
        let first: Vec<Vec<u8>> = (0..300).map(name).collect();
        let first_labels: Vec<Vec<u8>> = (0..300).map(|i| label(i, 9)).collect();
        let first_labels = labeled.then(|| refs(&first_labels));
        let made = init(
            dir.path(),
            database,
            &settings,
            &refs(&first),
            first_labels.as_deref(),
        );
        let (manifest, _) = made.unwrap();
        assert_eq!((manifest.items, manifest.version), (300, 0));
        let mut model: BTreeMap<u32, Vec<u8>> = (0..300).map(|i| (i, label(i, 9))).collect();
        let probes: Vec<Vec<u8>> = (0..700).map(name).collect();
        let published = |m: &Manifest| m.load(dir.path(), None).unwrap();
        let expected = |model: &BTreeMap<u32, Vec<u8>>| -> Vec<Option<Vec<u8>>> {
            (0..700).map(|i| model.get(&i).cloned()).collect()
        };
        let fhe = modes.fhe();
        let (mut client, found) = look_up(&published(&manifest), None, &probes, fhe);
        assert_eq!(found, expected(&model));
        // A server following the publishes: each round's databases from the last's.
        let mut loaded = manifest
            .load_following(dir.path(), None, None, None)
            .unwrap()
            .1;
        let mut tables = BTreeSet::new();
        for round in 0..5u32 {
            let upserts: Vec<u32> = (round * 100 + 250..round * 100 + 400).collect();
            let deletes: Vec<u32> = (0..700)
                .filter(|i| i % 9 == round && !upserts.contains(i))
                .collect();
            let (up, del): (Vec<Vec<u8>>, Vec<Vec<u8>>) = (
                upserts.iter().map(|&i| name(i)).collect(),
                deletes.iter().map(|&i| name(i)).collect(),
            );
            let labels: Vec<Vec<u8>> = upserts.iter().map(|&i| label(i, round)).collect();
            let labels = labeled.then(|| refs(&labels));
            let (up, del): (Vec<&[u8]>, Vec<&[u8]>) = (refs(&up), refs(&del));
            let applied = update(dir.path(), database, &up, labels.as_deref(), &del);
            let (applied, manifest) = applied.unwrap();
            let present = upserts.iter().filter(|i| model.contains_key(i)).count() as u64;
            let held = deletes.iter().filter(|i| model.contains_key(i)).count() as u64;
            let (present, relabeled) = match labeled {
                true => (0, present),
                false => (present, 0),
            };
            assert_eq!(
                (applied.present, applied.relabeled, applied.deleted),
                (present, relabeled, held),
                "round {round}"
            );
            deletes.iter().for_each(|i| {
                model.remove(i);
            });
            model.extend(upserts.iter().map(|&i| (i, label(i, round))));
            assert_eq!(manifest.version, u64::from(round) + 1);
            assert_eq!(manifest.items, model.len() as u64);
            tables.extend(manifest.labels.as_ref().map(|l| l.version));
            let following = manifest.load_following(dir.path(), None, loaded.as_ref(), None);
            let (following, fhe_loaded) = following.unwrap();
            loaded = fhe_loaded;
            let (next, found) = look_up(&following, Some(client), &probes, fhe && round == 4);
            assert_eq!(found, expected(&model), "round {round}");
            client = next;
        }
        if labeled {
            assert!(tables.len() > 1, "the table written again: {tables:?}");
        }
        let offers = published(&Manifest::read(dir.path()).unwrap())
            .description()
            .fhe;
        assert_eq!(offers.is_empty(), !modes.fhe());
        let store = Store::open(&store_url(dir.path(), database)).unwrap();
        let (_, items, labels) = store.items().unwrap();
        assert_eq!(labels.is_some(), labeled);
        let stored: BTreeSet<Vec<u8>> = items.iter().map(<[u8]>::to_vec).collect();
        assert_eq!(stored, model.keys().map(|&i| name(i)).collect());
        // The count an update checks the bound by is the set's: one more item than the
        // bound is refused, as many in and out are not.
        let room = (1 << 12) - model.len() as u32;
        let fill: Vec<Vec<u8>> = (10_000..10_000 + room).map(name).collect();
        let fill_labels = vec![&b"f"[..]; fill.len()];
        let fill_labels = labeled.then_some(&fill_labels[..]);
        update(dir.path(), database, &refs(&fill), fill_labels, &[]).unwrap();
        let o: [&[u8]; 1] = [b"o"];
        let one = labeled.then_some(&o[..]);
        let over = update(dir.path(), database, &[&name(20_000)], one, &[]);
        assert!(matches!(over, Err(Error::Usage(_))), "{over:?}");
        let swap = update(
            dir.path(),
            database,
            &[&name(20_000)],
            one,
            &[&name(10_000)],
        );
        let swapped = swap.unwrap().1;
        assert_eq!(swapped.items, 1 << 12);
        // The fill outgrew the ub-fhe deltas' bound: the database written again.
        if let Some(files) = &swapped.fhe {
            assert!(files.version > 0, "the ub-fhe database written again");
        }
        let (_, found) = look_up(&published(&swapped), Some(client), &probes, fhe);
        assert_eq!(found, expected(&model), "after the fill");
    }

    /// An update whose operations committed but whose publish never ran (the process
    /// killed between the two) is published by the next command; files a publish left
    /// behind unnamed (and temporary ones) are removed by the next one and never read; a
    /// published file altered on disk is refused when loaded, not served.
    #[test]
    fn what_an_interrupted_update_committed_is_published_next() {
        let dir = tempfile::tempdir().unwrap();
        let first: Vec<Vec<u8>> = (0..50).map(name).collect();
        init(dir.path(), None, &settings(1 << 10), &refs(&first), None).unwrap();
        let store = Store::open(&store_url(dir.path(), None)).unwrap();
        let added = [name(50), name(51)];
        store.apply(&refs(&added), None, &[&name(0)]).unwrap();
        drop(store);
        let stray = dir
            .path()
            .join("published")
            .join("tags-0-1-000000000000.bin");
        std::fs::write(&stray, b"half-written").unwrap();
        let temporary = dir.path().join("published").join(".tmpAbCdEf");
        std::fs::write(&temporary, b"cut short").unwrap();
        let before = Manifest::read(dir.path()).unwrap();
        assert_eq!((before.version, before.items), (0, 50), "not published yet");
        let (applied, after) = update(dir.path(), None, &[], None, &[]).unwrap();
        assert_eq!(applied, Applied::default());
        assert_eq!((after.version, after.items), (1, 51));
        assert!(!stray.exists(), "an unnamed file is removed");
        assert!(!temporary.exists(), "a temporary file is removed");
        let probes: Vec<Vec<u8>> = (0..53).map(name).collect();
        let (_, found) = look_up(&after.load(dir.path(), None).unwrap(), None, &probes, false);
        let want: Vec<bool> = (0..53).map(|i| (1..52).contains(&i)).collect();
        assert_eq!(hits(&found), want);
        let tags = dir.path().join("published").join(&after.tags.file);
        let mut bytes = std::fs::read(&tags).unwrap();
        bytes[20] ^= 1;
        std::fs::write(&tags, bytes).unwrap();
        assert!(matches!(
            after.load(dir.path(), None),
            Err(Error::Integrity(_))
        ));
    }

    /// A server that read the manifest just before a publish replaced it (and removed the
    /// files it named) loads the new one instead of failing; a manifest whose own files
    /// are missing is an error.
    #[test]
    fn a_server_starting_during_a_publish_loads_the_new_version() {
        let dir = tempfile::tempdir().unwrap();
        let first: Vec<Vec<u8>> = (0..50).map(name).collect();
        let (stale, _) = init(dir.path(), None, &settings(1 << 10), &refs(&first), None).unwrap();
        update(dir.path(), None, &[&name(50)], None, &[]).unwrap();
        assert!(stale.load(dir.path(), None).is_err(), "its files are gone");
        let (current, published) =
            serve::load_current(dir.path(), stale, &PlaintextBudget::new(0)).unwrap();
        let manifest = current.manifest;
        assert_eq!((manifest.version, manifest.items), (1, 51));
        let (_, found) = look_up(&published, None, &[name(50)], false);
        assert_eq!(hits(&found), [true]);
        let tags = dir.path().join("published").join(&manifest.tags.file);
        std::fs::remove_file(tags).unwrap();
        assert!(serve::load_current(dir.path(), manifest, &PlaintextBudget::new(0)).is_err());
    }

    /// One operator at a time; a set kept within its size; no item both added and
    /// removed; a key rotation's interrupted key file reused, not replaced.
    #[test]
    fn the_store_keeps_its_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let first: Vec<Vec<u8>> = (0..10).map(name).collect();
        init(dir.path(), None, &settings(12), &refs(&first), None).unwrap();
        let held = Writer::take(dir.path()).unwrap();
        assert!(update(dir.path(), None, &[], None, &[]).is_err());
        drop(held);
        let many: Vec<Vec<u8>> = (10..13).map(name).collect();
        assert!(update(dir.path(), None, &refs(&many), None, &[]).is_err());
        assert_eq!(
            Manifest::read(dir.path()).unwrap().items,
            10,
            "nothing changed"
        );
        assert!(update(dir.path(), None, &[&name(20)], None, &[&name(20)]).is_err());
        let interrupted = keys::create(dir.path(), 1).unwrap();
        let m = rotate_key(dir.path(), None).unwrap();
        assert_eq!(m.epoch, 1);
        let key = keys::load(dir.path(), 1).unwrap();
        assert_eq!(key.public(), interrupted.public());
        assert!(
            init(dir.path(), None, &settings(12), &[], None).is_err(),
            "made"
        );
        // An init interrupted after its store committed, before its first publish: taken
        // up again, publishing what the store holds.
        let begun = tempfile::tempdir().unwrap();
        let store = Store::open(&store_url(begun.path(), None)).unwrap();
        store.create(&settings(12), &refs(&first), None).unwrap();
        std::fs::write(begun.path().join(LOCK), b"").unwrap();
        let (m, how) = init(begun.path(), None, &settings(12), &[b"other"], None).unwrap();
        assert_eq!((how, m.items), (Init::Resumed, 10));
        let elsewhere = tempfile::tempdir().unwrap();
        assert!(update(elsewhere.path(), None, &[], None, &[]).is_err());
        assert!(
            !elsewhere.path().join(LOCK).exists(),
            "nothing made where no dataset is"
        );
    }
}

#[cfg(test)]
mod serving {
    use super::*;
    use serve::{serve, ServeArgs};
    use std::time::Duration;
    use tests::hits;
    use venn::crypto::{Block, Prg};
    use venn::net::tcp_channel;
    use venn::session::run_plan::KeyForm;
    use venn::unbalanced::link::Session;
    use venn_app::transport::Transport;

    /// A dataset of the keys "0" to "99" in a new directory, and a server of it (grace
    /// `grace`, stopping after `sessions` sessions) on a thread: the directory, the
    /// server's address and its thread.
    fn serving(
        grace: Duration,
        sessions: u64,
    ) -> (
        tempfile::TempDir,
        std::net::SocketAddr,
        std::thread::JoinHandle<Result<()>>,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let items: Vec<Vec<u8>> = (0..100u32).map(|i| i.to_string().into_bytes()).collect();
        let refs: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
        let form = KeyForm {
            trim: false,
            lowercase: false,
            columns: 1,
            any: false,
        };
        let settings = store::Settings {
            max_items: 1 << 10,
            max_query: 16,
            form,
            label_len: None,
            modes: store::Modes::Cache,
        };
        init(dir.path(), None, &settings, &refs, None).unwrap();
        let args = ServeArgs {
            dir: dir.path().to_path_buf(),
            listen: "127.0.0.1:0".into(),
            transport: Transport::loopback(),
            timeout: Duration::from_secs(10),
            session_limit: Duration::from_secs(60),
            max_sessions: 4,
            burst: 64,
            per_day: 64,
            grace,
            sessions: Some(sessions),
            plaintext_bytes: 1 << 30,
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let server = std::thread::spawn(move || serve(args, |addr| tx.send(addr).unwrap()));
        (dir, rx.recv().unwrap(), server)
    }

    fn connect(addr: std::net::SocketAddr) -> impl venn::net::Channel {
        let socket = std::net::TcpStream::connect(addr).unwrap();
        tcp_channel(socket, Duration::from_secs(10)).unwrap()
    }

    const PROBES: [&[u8]; 2] = [b"7", b"700"];

    /// The server gives each client message its `--timeout`, not the short wait it
    /// looks for the next connection with: a client slow between its requests is served.
    #[test]
    fn a_client_slow_between_requests_is_served() {
        let (_dir, addr, server) = serving(Duration::ZERO, 1);
        let mut chan = connect(addr);
        let mut session = Session::open(&mut chan).unwrap();
        std::thread::sleep(Duration::from_millis(600));
        let client = session.sync(None, 1 << 10).unwrap();
        std::thread::sleep(Duration::from_millis(600));
        let found = session
            .query(&client, &PROBES, &mut Prg::from_seed(Block::from(3)))
            .unwrap();
        assert_eq!(hits(&found), [true, false]);
        session.close().unwrap();
        server.join().unwrap().unwrap();
    }

    /// A connection that says nothing holds up no other client: each is screened on a
    /// thread of its own.
    #[test]
    fn a_silent_connection_holds_up_nobody() {
        let (_dir, addr, server) = serving(Duration::ZERO, 1);
        let silent = std::net::TcpStream::connect(addr).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let start = std::time::Instant::now();
        let mut chan = connect(addr);
        let mut session = Session::open(&mut chan).unwrap();
        let client = session.sync(None, 1 << 10).unwrap();
        let found = session.query(&client, &PROBES, &mut Prg::from_seed(Block::from(5)));
        assert_eq!(hits(&found.unwrap()), [true, false]);
        session.close().unwrap();
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
        drop(silent);
        server.join().unwrap().unwrap();
    }

    /// After a key rotation a session begun under the old key is answered within the
    /// grace and refused after it (as `EpochChanged`), as a new session under the old
    /// epoch would be.
    #[test]
    fn the_old_key_answers_within_its_grace_only() {
        for (grace, answered) in [(Duration::from_secs(60), true), (Duration::ZERO, false)] {
            let (dir, addr, server) = serving(grace, 1);
            let mut chan = connect(addr);
            let mut session = Session::open(&mut chan).unwrap();
            let client = session.sync(None, 1 << 10).unwrap();
            rotate_key(dir.path(), None).unwrap();
            // The server looks at the manifest each second.
            std::thread::sleep(Duration::from_millis(2500));
            let found = session.query(&client, &PROBES, &mut Prg::from_seed(Block::from(4)));
            match answered {
                true => assert_eq!(hits(&found.unwrap()), [true, false]),
                false => {
                    let refused = found.unwrap_err().to_string();
                    assert!(refused.contains("key changed"), "{refused}");
                }
            }
            session.close().unwrap();
            server.join().unwrap().unwrap();
        }
    }
}
