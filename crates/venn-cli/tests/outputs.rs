//! Where `--output` and `--stats-json` go, as root (as these tests run here and in CI):
//! only a regular file is ever replaced; a device or a FIFO is written straight into,
//! standard output (`-`, `/dev/stdout`) gets the rows, and a directory or a disk is
//! refused.

use crate::common::*;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Output;

/// The receiver's rows: the header and the keys both files hold.
const ROWS: &str = "k\nb\nc\n";

/// Runs a receiver in `dir` on its `r.csv` with `args` (its stdout captured) against a
/// sender on `s.csv`; returns the receiver's run.
fn receive(dir: &Path, args: &[&str]) -> Output {
    let mut receiver = venn();
    receiver.current_dir(dir);
    let (r, addr) =
        spawn_listening_from(receiver, &[&["receive", "--input", "r.csv"], args].concat());
    let s = venn()
        .current_dir(dir)
        .args(["send", "--input", "s.csv", "--connect", &addr])
        .output()
        .unwrap();
    assert_success(&[&s]);
    wait_listening(r)
}

fn c_path(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).unwrap()
}

/// Makes a device node (`kind`: `S_IFCHR` or `S_IFBLK`) at `path`.
fn mknod(path: &Path, kind: libc::mode_t, major: u32, minor: u32) {
    // SAFETY: a valid C string; mknod(2) touches nothing of this process.
    let made = unsafe {
        libc::mknod(
            c_path(path).as_ptr(),
            kind | 0o666,
            libc::makedev(major, minor),
        )
    };
    assert_eq!(made, 0, "mknod: {}", std::io::Error::last_os_error());
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn only_a_regular_file_is_replaced() {
    let dir = tmp();
    let d = dir.path();
    write(d, "r.csv", "k\na\nb\nc\n");
    write(d, "s.csv", "k\nb\nc\nd\n");

    // A copy of the null device stays one (not truncated, not given other permissions);
    // a new file is owner-only.
    let null = d.join("null");
    mknod(&null, libc::S_IFCHR, 1, 3);
    let null_mode = mode(&null);
    let r = receive(d, &["--output", "null", "--stats-json", "new.json"]);
    assert_success(&[&r]);
    let meta = std::fs::symlink_metadata(&null).unwrap();
    assert!(meta.file_type().is_char_device(), "{meta:?}");
    assert_eq!((meta.rdev(), mode(&null)), (libc::makedev(1, 3), null_mode));
    assert_eq!(mode(&d.join("new.json")), 0o600);
    assert!(stderr(&r).contains("2 rows written"), "{}", stderr(&r));

    // Behind a symbolic link, the regular file is replaced (owner-only) and the link
    // kept; a FIFO is written into, for whoever reads it.
    let file = write(d, "file.csv", "old\n");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    symlink("file.csv", d.join("link")).unwrap();
    let fifo = d.join("fifo");
    // SAFETY: a valid C string; mkfifo(2) touches nothing of this process.
    assert_eq!(unsafe { libc::mkfifo(c_path(&fifo).as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let r = receive(d, &["--output", "link", "--stats-json", "fifo"]);
    assert_success(&[&r]);
    assert!(std::fs::symlink_metadata(d.join("link"))
        .unwrap()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), ROWS);
    assert_eq!(mode(&file), 0o600);
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    let stats: serde_json::Value = serde_json::from_str(&reader.join().unwrap()).unwrap();
    assert_eq!(stats["intersection_rows"], 2);

    // `-` is standard output; so is a link to it, as /dev/stdout is (checked on a copy
    // first, then on the system's own).
    symlink("/proc/self/fd/1", d.join("stdout")).unwrap();
    for out in ["-", "stdout", "/dev/stdout"] {
        let r = receive(d, &["--output", out]);
        assert_success(&[&r]);
        assert_eq!(String::from_utf8_lossy(&r.stdout), ROWS, "{out}");
        assert!(!d.join("-").exists(), "{out}");
        assert!(
            std::fs::symlink_metadata(d.join("stdout"))
                .unwrap()
                .is_symlink(),
            "{out}"
        );
    }
    assert!(std::fs::symlink_metadata("/dev/stdout")
        .unwrap()
        .is_symlink());

    // Refused before the peer is contacted: a directory, and a disk.
    mknod(&d.join("disk"), libc::S_IFBLK, 7, 0);
    for (out, why) in [(".", "is a directory"), ("disk", "is a block device")] {
        let o = venn()
            .current_dir(d)
            .args(["receive", "--input", "r.csv", "--output", out])
            .args(["--connect", "127.0.0.1:9", "--timeout", "1"])
            .output()
            .unwrap();
        assert_clean_failure(&o, why);
    }
    assert!(std::fs::symlink_metadata(d.join("disk"))
        .unwrap()
        .file_type()
        .is_block_device());
}
