#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| venn_cli::input::fuzz::csv_input(data));
