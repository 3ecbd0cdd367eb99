//! What a stagebench run reads of the host it runs on, synchronously and
//! without a socket of its own (the processes it starts are this
//! coordinator, making the built-in dataset, and git, answering about a
//! repository): this machine's record
//! (`environment.json`), its page cache (`--os-cache cold`), locks on the
//! directories runs share, the frozen dataset a run reads (the built-in
//! one made and frozen once), and the files a run is handed: `--inputs`,
//! digested before and after, and the items file of `--prepare`. The coordinator
//! orchestrates; what it reads of the machine and its files is here. See
//! ARCHITECTURE.md.
//!
//! Modules are listed by floor, lowest first: each uses only modules listed
//! above it (`scripts/check-floors.py` holds `.ci/run` to this order).

// Floor 0: each reads one thing and uses no sibling.
pub mod dataset;
pub mod dirlock;
pub mod git;
pub mod inputs;
pub mod items_file;
pub mod machine;
pub mod pagecache;
