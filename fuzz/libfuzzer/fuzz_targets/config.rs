//! libFuzzer target: `vitrine_fuzz::Target::Config`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    vitrine_fuzz::Target::Config.exercise(data);
});
