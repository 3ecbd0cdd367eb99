//! A phase of a user's items as jobs made one at a time, as the dispatcher
//! hands them out: the plan of a phase of 10⁶ items is the items file it
//! reads them from ([`host::items_file::Source`]), not 10⁶ jobs.

use super::{Item, Job};
use host::items_file::{Cursor, Source};
use protocol::{JobId, Stage};
use std::sync::Arc;

/// Every item of a phase as a job: the first job with another item.
#[derive(Clone, Debug)]
pub(crate) struct Feed {
    /// The phase's first job (numbered first, of the first item handed
    /// out): its key, stage, spans and sampling are every job's.
    pub(crate) first: Job,
    /// The items, read in the order they are handed out.
    source: Arc<Source>,
    /// Items a worker is handed beyond the one it runs (`--prefetch`).
    pub(crate) ahead: usize,
}

impl Feed {
    /// The items of `source`, their jobs numbered from `first`'s id, whose
    /// stage names its item (any: each job's is replaced).
    pub(crate) fn new(first: Job, source: Arc<Source>) -> Feed {
        let mut feed = Feed { first, source, ahead: 0 };
        let first = feed.jobs().next();
        if let Some(job) = first {
            feed.first = job;
        }
        feed
    }

    /// The same, a worker handed `n` items beyond the one it runs.
    pub(crate) fn holding_ahead(self, n: usize) -> Feed {
        Feed { ahead: n, ..self }
    }

    /// A phase's first item job, numbered `id`, for tests of what feeds it.
    #[cfg(test)]
    pub(crate) fn first_for_test(id: u32) -> Job {
        let stage = Stage::PrepareItem {
            command: "prep".into(),
            id: String::new(),
            out: "o".into(),
            ready_timeout_ms: 5,
        };
        Job {
            id: JobId(id),
            order: id as usize,
            key: "k".into(),
            stage,
            item: Some(Item { noun: "item", n: 0, of: 0 }),
            spans: Vec::new(),
            sample: None,
        }
    }

    /// How many jobs it holds.
    pub(crate) fn len(&self) -> usize {
        self.source.count()
    }

    /// Where its items are read from.
    pub(crate) fn source(&self) -> &Arc<Source> {
        &self.source
    }

    /// A reader of its items from the first.
    pub(crate) fn cursor(&self) -> Cursor {
        self.source.cursor()
    }

    /// The `i`-th job handed out, of the item at `line` (from 0) with `id`.
    pub(crate) fn job(&self, i: usize, (line, id): (usize, String)) -> Job {
        let first = &self.first;
        // Field by field: the first job's own id is never copied to be
        // dropped, nor its stage twice.
        let stage = match &first.stage {
            Stage::PrepareItem { command, out, ready_timeout_ms, .. } => Stage::PrepareItem {
                command: command.clone(),
                id,
                out: out.clone(),
                ready_timeout_ms: *ready_timeout_ms,
            },
            other => other.clone(),
        };
        let noun = first.item.map_or("item", |it| it.noun);
        Job {
            id: JobId(first.id.0 + i as u32),
            order: first.order + i,
            key: first.key.clone(),
            stage,
            item: Some(Item { noun, n: line as u64 + 1, of: self.len() as u64 }),
            spans: first.spans.clone(),
            sample: first.sample.clone(),
        }
    }

    /// Every job, in the order they are handed out, its item read from the
    /// file as it is made.
    pub(crate) fn jobs(&self) -> impl Iterator<Item = Job> + '_ {
        let mut cursor = self.cursor();
        let mut i = 0;
        std::iter::from_fn(move || {
            let job = self.job(i, cursor.next_item()?);
            i += 1;
            Some(job)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Jobs made one at a time are numbered on from the first, carry their
    /// item's id and line, and share the rest.
    #[test]
    fn a_feed_makes_each_job_from_the_first_with_its_item() {
        let (_dir, source) = host::items_file::written_for_test(b"a\t1\nb\t1\nc\t2\n");
        let feed = Feed::new(Feed::first_for_test(7), source);
        let jobs: Vec<Job> = feed.jobs().collect();
        assert_eq!(feed.len(), 3);
        assert_eq!(jobs.iter().map(|j| j.id.0).collect::<Vec<_>>(), [7, 8, 9]);
        let lines: Vec<u64> = jobs.iter().map(|j| j.item.unwrap().n).collect();
        assert_eq!(lines, [3, 1, 2]);
        let ids: Vec<String> = jobs
            .iter()
            .map(|j| match &j.stage {
                Stage::PrepareItem { id, .. } => id.clone(),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(ids, ["c", "a", "b"]);
        assert_eq!(feed.first.item.unwrap().n, 3);
        assert!(jobs.iter().all(|j| j.key == "k" && j.item.unwrap().of == 3));
    }
}
