//! libFuzzer target: `vitrine_fuzz::Target::Feed`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    vitrine_fuzz::Target::Feed.exercise(data);
});
