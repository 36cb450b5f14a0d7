//! libFuzzer target: `vitrine_fuzz::Target::Stream`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    vitrine_fuzz::Target::Stream.exercise(data);
});
