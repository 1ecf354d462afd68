//! The `signoff` binary.

fn main() {}
