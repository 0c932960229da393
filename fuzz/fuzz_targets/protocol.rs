#![no_main]
//! Any registered protocol's messages, tampered with (`venn::fuzz::tampered_run`): the
//! protocol is the one `VENN_FUZZ_PROTOCOL` names, its corpus `fuzz/corpus/NAME/`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| venn::fuzz::tampered_run(
    venn::fuzz::protocol_from_env(),
    data
));
