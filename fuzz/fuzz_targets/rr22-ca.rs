#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| venn::fuzz::tampered_run("rr22-ca", data));
