#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| venn_app::input::fuzz::csv_input(data));
