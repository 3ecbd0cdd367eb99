//! What a pipeline's spans are, in the vocabulary of the recipe's
//! components: a campaign's `roles` and each stage's own, which win. With
//! roles, a pipeline's judgment says what the recipe's says.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a pipeline's span is (a campaign file's `roles` values).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Startup,
    Integrity,
    RecordCheck,
    Load,
    Restore,
    Recompute,
    Work,
}

impl Role {
    /// The component (see `modes::recipe::COMPONENTS`) the role's seconds
    /// join. A start-up span is inside its stage's wall, so it is kept apart
    /// from process start-up (`startup`, the time before the stage began,
    /// which the worker measures): each second is counted once.
    pub fn component(self) -> &'static str {
        match self {
            Role::Startup => "startup_spans",
            Role::Integrity => "integrity",
            Role::RecordCheck => "record_check",
            Role::Load => "load",
            Role::Restore => "restore",
            Role::Recompute => "recompute",
            Role::Work => "work",
        }
    }
}

/// Every role a campaign gives: the campaign's, by span name, and each
/// stage's own, by stage and span name.
#[derive(Clone, Debug, Default)]
pub struct Roles {
    pub campaign: BTreeMap<String, Role>,
    pub stages: BTreeMap<String, BTreeMap<String, Role>>,
}

impl Roles {
    /// The role of `stage`'s span `span`: the stage's own, else the campaign's.
    pub fn of(&self, stage: &str, span: &str) -> Option<Role> {
        let own = self.stages.get(stage).and_then(|r| r.get(span));
        own.or_else(|| self.campaign.get(span)).copied()
    }

    /// Whether any span has a role.
    pub fn any(&self) -> bool {
        !self.campaign.is_empty() || self.stages.values().any(|r| !r.is_empty())
    }

    /// Whether any span, anywhere, has the role `role`.
    pub fn names(&self, role: Role) -> bool {
        self.stages
            .values()
            .flat_map(|r| r.values())
            .chain(self.campaign.values())
            .any(|r| *r == role)
    }
}
