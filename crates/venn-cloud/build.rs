//! Rebuilds the crate when a migration changes: `sqlx::migrate!` embeds them at compile
//! time, and cargo would not notice otherwise (a new or renamed migration file).
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
