//! Test binaries find the libpython they were built against (the wheel links none).
fn main() {
    pyo3_build_config::add_libpython_rpath_link_args();
}
