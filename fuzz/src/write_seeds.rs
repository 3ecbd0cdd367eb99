//! Writes the fuzzers' starting inputs (a valid frame of every message, and
//! a conversation each way) into the directory given, one file each.

fn main() {
    let dir = std::env::args_os().nth(1).expect("usage: write-seeds DIR");
    let dir = std::path::Path::new(&dir);
    std::fs::create_dir_all(dir).expect("creating the corpus directory");
    for (i, seed) in protocol::fuzzing::seeds().iter().enumerate() {
        std::fs::write(dir.join(format!("seed-{i:02}")), seed).expect("writing a seed");
    }
}
