//! A phase of a user's items as jobs made one at a time, as the dispatcher
//! hands them out: the plan of a phase of 10⁶ items is its ids and their
//! order (shared by every phase of the run), not 10⁶ jobs.

use super::{Item, Job};
use protocol::{JobId, Stage};
use std::sync::Arc;

/// Every item of a phase as a job: the first job with another item.
#[derive(Clone, Debug)]
pub(crate) struct Feed {
    /// The phase's first job (numbered first, of the first item handed
    /// out): its key, stage, spans and sampling are every job's.
    pub(crate) first: Job,
    /// The ids, in the items file's order.
    ids: Arc<[String]>,
    /// The order they are handed out in: lines (0-based) of `ids`.
    order: Arc<[u32]>,
    /// Items a worker is handed beyond the one it runs (`--prefetch`).
    pub(crate) ahead: usize,
}

impl Feed {
    /// The items `ids` in `order`, their jobs numbered from `first`'s id,
    /// whose stage names its item (any: each job's is replaced).
    pub(crate) fn new(first: Job, ids: Arc<[String]>, order: Arc<[u32]>) -> Feed {
        let mut feed = Feed { first, ids, order, ahead: 0 };
        if !feed.order.is_empty() {
            feed.first = feed.job(0);
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
        self.order.len()
    }

    /// The `i`-th job handed out.
    pub(crate) fn job(&self, i: usize) -> Job {
        let line = self.order[i] as usize;
        let mut stage = self.first.stage.clone();
        if let Stage::PrepareItem { id, .. } = &mut stage {
            *id = self.ids[line].clone();
        }
        let noun = self.first.item.map_or("item", |it| it.noun);
        Job {
            id: JobId(self.first.id.0 + i as u32),
            order: self.first.order + i,
            stage,
            item: Some(Item { noun, n: line as u64 + 1, of: self.ids.len() as u64 }),
            ..self.first.clone()
        }
    }

    /// Every job, in the order they are handed out.
    pub(crate) fn jobs(&self) -> impl Iterator<Item = Job> + '_ {
        (0..self.len()).map(|i| self.job(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Jobs made one at a time are numbered on from the first, carry their
    /// item's id and line, and share the rest.
    #[test]
    fn a_feed_makes_each_job_from_the_first_with_its_item() {
        let ids: Arc<[String]> = ["a", "b", "c"].map(String::from).into();
        let feed = Feed::new(Feed::first_for_test(7), ids, vec![2, 0, 1].into());
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
