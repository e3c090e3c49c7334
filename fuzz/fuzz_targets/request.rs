#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| dory_fuzz::request::request(data));
