//! How a policy kind turns its spec (data from the file or the control plane) into a
//! ready [`Policy`], once per snapshot: [`PolicyKind`] names the kind, says where in
//! the chain it runs ([`Stage`]) and builds it, reporting every problem into
//! [`BuildCx`] and carrying on, so a file's errors are all reported at once.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

use turnpike_model::GatewayFile;

use crate::problem::Problem;
use crate::runtime::Runtime;
use crate::Policy;

/// Where a kind runs in an API's chain. The chain is sorted by stage (stably, so kinds
/// of one stage keep the order they were declared in); request hooks run in this
/// order, response hooks in reverse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// A SOAP pass-through's envelope and Faults: first, so every later refusal
    /// becomes a Fault.
    Envelope,
    /// Before lifecycle and auth, answering unauthenticated requests too (deprecation
    /// headers, CORS).
    Edge,
    /// Whether the API serves at all (lifecycle).
    Admission,
    /// Transport-shaped limits on an admitted API (body size).
    Limits,
    /// Who the caller is and whether they may call (credential, subscription, scopes).
    Auth,
    /// Quotas, on the authenticated caller.
    Throttle,
    /// Header and body transforms: last on the request, first on the response.
    Transform,
    /// A protocol mapper (SOAP-to-REST) that transforms see the REST side of.
    Mapper,
    /// Kinds that read the admitted caller's body (GraphQL analysis).
    Late,
    /// Token budgets: after every kind that reads the request body, so that the AI
    /// kind's token estimate is in `ctx.ext` when the budget is checked.
    Budget,
}

/// A policy kind: its name in the file, its spec, its stage and its build.
pub trait PolicyKind {
    /// The key the file uses for the kind (and the chain's name for its policy).
    const NAME: &'static str;
    /// What the file says about one instance of the kind.
    type Spec: ?Sized;
    /// Where in the chain this instance runs.
    fn stage(spec: &Self::Spec) -> Stage;
    /// The ready policy, or `None` when the spec asks for nothing or has problems
    /// (each pushed into `cx` under `cx.at`).
    fn build(spec: &Self::Spec, cx: &mut BuildCx<'_>) -> Option<Arc<dyn Policy>>;
}

/// What a build sees: where the spec is in the document, where problems go, the
/// gateway's long-lived [`Runtime`], the whole file, and the per-file scratch.
pub struct BuildCx<'a> {
    /// The index in `file.apis` of the API being built (to find what a file-wide
    /// preparation left for it in `scratch`).
    pub api: usize,
    /// The spec's document path (`apis[1].auth`); problems name paths below it.
    pub at: String,
    pub problems: &'a mut Vec<Problem>,
    pub runtime: &'a Runtime,
    pub file: &'a GatewayFile,
    /// What kinds prepare once per file (the compiled `security:` section, the
    /// subscriptions, the throttler) for every API's build to share.
    pub scratch: &'a mut Scratch,
}

impl BuildCx<'_> {
    /// Records a problem at `cx.at` followed by `below` (`".allow_origins"`, or empty).
    pub fn problem(&mut self, below: &str, message: impl Into<String>) {
        self.problems
            .push(Problem::new(format!("{}{below}", self.at), message));
    }
}

/// A type map of what one file's compile prepares once.
#[derive(Default)]
pub struct Scratch {
    entries: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
}

impl Scratch {
    /// The entry of type `T`, if one was stored.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.entries
            .get(&TypeId::of::<T>())
            .and_then(|e| e.downcast_ref::<T>())
    }

    /// The entry of type `T`, mutable, if one was stored.
    pub fn get_mut<T: Any + Send + Sync>(&mut self) -> Option<&mut T> {
        self.entries
            .get_mut(&TypeId::of::<T>())
            .and_then(|e| e.downcast_mut::<T>())
    }

    /// Stores `value`, replacing an entry of the same type.
    pub fn insert<T: Any + Send + Sync>(&mut self, value: T) {
        self.entries.insert(TypeId::of::<T>(), Box::new(value));
    }
}

impl std::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scratch")
            .field("entries", &self.entries.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Hooks, Policy};

    struct Named(&'static str);
    impl Policy for Named {
        fn name(&self) -> &'static str {
            self.0
        }
        fn hooks(&self) -> Hooks {
            Hooks::NONE
        }
    }

    /// A kind whose spec is a word: "bad" is a problem, anything else builds.
    struct Word;
    impl PolicyKind for Word {
        const NAME: &'static str = "word";
        type Spec = str;
        fn stage(_: &str) -> Stage {
            Stage::Edge
        }
        fn build(spec: &str, cx: &mut BuildCx<'_>) -> Option<Arc<dyn Policy>> {
            if spec == "bad" {
                cx.problem(".word", "bad word");
                return None;
            }
            Some(Arc::new(Named(Word::NAME)))
        }
    }

    #[test]
    fn stages_sort_in_the_order_the_chain_runs() {
        use Stage::*;
        let mut s = [
            Late, Mapper, Transform, Throttle, Auth, Limits, Admission, Edge, Envelope,
        ];
        s.sort();
        assert_eq!(
            s,
            [Envelope, Edge, Admission, Limits, Auth, Throttle, Transform, Mapper, Late]
        );
    }

    #[test]
    fn every_build_reports_its_problems_and_the_others_still_build() {
        let (file, runtime) = (GatewayFile::default(), Runtime::default());
        let (mut problems, mut scratch) = (Vec::new(), Scratch::default());
        let mut built = Vec::new();
        for (i, word) in ["bad", "good", "bad"].into_iter().enumerate() {
            let mut cx = BuildCx {
                api: i,
                at: format!("apis[{i}]"),
                problems: &mut problems,
                runtime: &runtime,
                file: &file,
                scratch: &mut scratch,
            };
            built.extend(Word::build(word, &mut cx));
        }
        assert_eq!(built.len(), 1);
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["apis[0].word", "apis[2].word"]);
    }

    #[test]
    fn scratch_keeps_one_entry_per_type() {
        let mut s = Scratch::default();
        s.insert(1u32);
        s.insert(2u32);
        s.insert("x");
        assert_eq!(s.get::<u32>(), Some(&2));
        if let Some(n) = s.get_mut::<u32>() {
            *n += 1;
        }
        assert_eq!(s.get::<u32>(), Some(&3));
        assert_eq!(s.get::<&str>(), Some(&"x"));
    }
}
