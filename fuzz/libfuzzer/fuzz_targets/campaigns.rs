//! libFuzzer target: `vitrine_fuzz::Target::Campaigns`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    vitrine_fuzz::Target::Campaigns.exercise(data);
});
