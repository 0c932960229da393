#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| venn::fuzz::tampered_run("hek12-ca", data));
