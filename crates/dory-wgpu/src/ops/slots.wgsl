// Where position j sits in a layer's cache (cache.rs's `Keys::slot`): slot j below the
// sinks, else sinks + (j mod cap), or slot j when cap is 0 (an exact full layer). A sliding
// ring is sinks 0 and cap its slots; a sealed full layer sinks ns and cap w. Every module
// that includes this has `sinks` and `cap` in its parameters `p`.

fn slot_of(j: u32) -> u32 {
    if (j < p.sinks || p.cap == 0u) {
        return j;
    }
    return p.sinks + j % p.cap;
}
